/**
 * The script the page browser runs inside a page: in an isolated world of
 * the bot's Chromium (the page's own scripts cannot see or tamper with it)
 * and in the emulator's in-process DOM. One source for both, so the real
 * and the emulated browser list, name, mask and operate elements alike.
 *
 * It is a source string, not a function, because it is shipped over CDP as
 * text and core is typed without the DOM library. Called as
 * `script(command, target, window?)`; it never throws, answering
 * `{ error: { code, message } }` instead, so errors cross CDP by value.
 */
export const PAGE_SCRIPT = String.raw`(function (command, target, win) {
  var w = win || globalThis;
  var doc = w.document;
  var INTERACTIVE = 'a[href],button,input,select,textarea,summary,iframe,frame,[role=button],[role=link],[role=checkbox],[role=radio],[role=switch],[role=tab],[role=menuitem],[role=option],[role=combobox],[role=textbox],[role=searchbox],[role=slider],[contenteditable=""],[contenteditable=true],[tabindex]:not([tabindex="-1"])';
  var MASK = "••••••";
  function clean(s, max) { s = String(s == null ? "" : s).replace(/\s+/g, " ").trim(); return s.length > max ? s.slice(0, max - 1) + "…" : s; }
  function tag(el) { return String(el.tagName || "").toLowerCase(); }
  function isPassword(el) { return tag(el) === "input" && String(el.type).toLowerCase() === "password"; }
  function roleOf(el) {
    var explicit = el.getAttribute("role");
    if (explicit) return explicit.split(" ")[0];
    var t = tag(el);
    if (t === "a") return "link";
    if (t === "button" || t === "summary") return "button";
    if (t === "select") return el.multiple ? "listbox" : "combobox";
    if (t === "textarea") return "textbox";
    if (t === "iframe" || t === "frame") return "frame";
    if (t === "input") {
      var type = String(el.type || "text").toLowerCase();
      if (type === "checkbox" || type === "radio") return type;
      if (type === "button" || type === "submit" || type === "reset" || type === "image") return "button";
      if (type === "range") return "slider";
      if (type === "search") return "searchbox";
      if (type === "number") return "spinbutton";
      return "textbox";
    }
    if (el.isContentEditable || el.getAttribute("contenteditable") === "" || el.getAttribute("contenteditable") === "true") return "textbox";
    return "generic";
  }
  function textOf(el) { return el.innerText !== undefined && el.innerText !== null && el.innerText !== "" ? el.innerText : el.textContent; }
  function nameOf(el) {
    var label = el.getAttribute("aria-label");
    if (label) return clean(label, 120);
    var by = el.getAttribute("aria-labelledby");
    if (by) {
      var parts = by.split(/\s+/).map(function (id) { var n = doc.getElementById(id); return n ? textOf(n) : ""; });
      if (parts.join("").trim()) return clean(parts.join(" "), 120);
    }
    var t = tag(el);
    if ((t === "input" || t === "select" || t === "textarea") && el.labels && el.labels.length) {
      return clean(Array.prototype.map.call(el.labels, function (l) { return textOf(l); }).join(" "), 120);
    }
    if (t === "input") {
      var type = String(el.type).toLowerCase();
      if ((type === "submit" || type === "button" || type === "reset") && el.value) return clean(el.value, 120);
      if (type === "image" && el.alt) return clean(el.alt, 120);
    }
    if (t !== "input" && t !== "select" && t !== "textarea" && t !== "iframe") {
      var own = clean(textOf(el), 120);
      if (own) return own;
      var img = el.querySelector && el.querySelector("img[alt]");
      if (img) return clean(img.getAttribute("alt"), 120);
    }
    return clean(el.getAttribute("placeholder") || el.getAttribute("title") || el.getAttribute("name") || "", 120);
  }
  function hidden(el, layout) {
    for (var n = el; n && n.nodeType === 1; n = n.parentElement) {
      if (n.hidden || n.getAttribute("aria-hidden") === "true") return true;
      if (tag(n) === "input" && String(n.type).toLowerCase() === "hidden") return true;
      var style = w.getComputedStyle ? w.getComputedStyle(n) : null;
      if (style && (style.display === "none" || style.visibility === "hidden")) return true;
      if (!layout && n.style && n.style.display === "none") return true;
    }
    if (!layout) return false;
    var r = el.getBoundingClientRect();
    return r.width === 0 && r.height === 0;
  }
  function box(el) {
    var r = el.getBoundingClientRect();
    return { x: Math.round(r.left), y: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height) };
  }
  function inViewport(b, layout) {
    if (!layout) return true;
    return b.x + b.width > 0 && b.y + b.height > 0 && b.x < w.innerWidth && b.y < w.innerHeight;
  }
  function shadowControls(el) {
    var root = el.shadowRoot;
    return !!(root && root.querySelector && root.querySelector(INTERACTIVE));
  }
  function describe(el, layout) {
    var t = tag(el);
    var b = box(el);
    var d = { role: roleOf(el), name: nameOf(el), bbox: b, inViewport: inViewport(b, layout) };
    if (t === "input" || t === "textarea") {
      var type = String(el.type || "").toLowerCase();
      if (type === "checkbox" || type === "radio") d.checked = !!el.checked;
      else if (type !== "submit" && type !== "button" && type !== "reset" && type !== "image") d.value = isPassword(el) ? (el.value ? MASK : "") : clean(el.value, 200);
    } else if (t === "select") {
      var chosen = el.options[el.selectedIndex];
      d.value = chosen ? clean(chosen.label || chosen.text, 120) : "";
      d.options = Array.prototype.slice.call(el.options, 0, 25).map(function (o) { return clean(o.label || o.text, 60); });
    } else if (el.isContentEditable) d.value = clean(el.textContent, 200);
    var aria = el.getAttribute("aria-checked");
    if (aria === "true" || aria === "false") d.checked = aria === "true";
    if (el.disabled || el.getAttribute("aria-disabled") === "true") d.disabled = true;
    var expanded = el.getAttribute("aria-expanded");
    if (expanded === "true" || expanded === "false") d.expanded = expanded === "true";
    // Only the "on" states are kept, as for checked: off is the default a person reads.
    if (el.getAttribute("aria-pressed") === "true") d.pressed = true;
    if (el.getAttribute("aria-selected") === "true") d.selected = true;
    if (t === "details" || (t === "summary" && el.parentElement && tag(el.parentElement) === "details")) d.expanded = !!(el.open || (el.parentElement && el.parentElement.open));
    if (doc.activeElement === el) d.focused = true;
    if (t === "iframe" || t === "frame") { d.unreachable = "frame"; if (!d.name) d.name = clean(el.getAttribute("src") || "", 80); }
    else if (shadowControls(el)) d.unreachable = "shadow-dom";
    return d;
  }
  var SKIP_TAGS = { script: 1, style: 1, noscript: 1, template: 1, head: 1, title: 1, svg: 1 };
  var BLOCK_TAGS = { address: 1, article: 1, aside: 1, blockquote: 1, br: 1, dd: 1, div: 1, dl: 1, dt: 1, fieldset: 1, figcaption: 1, figure: 1, footer: 1, form: 1, h1: 1, h2: 1, h3: 1, h4: 1, h5: 1, h6: 1, header: 1, hr: 1, li: 1, main: 1, nav: 1, ol: 1, p: 1, pre: 1, section: 1, table: 1, tr: 1, ul: 1 };
  function isBlock(el, style) {
    if (style && style.display) return !/^(inline|contents|none)/.test(style.display) || tag(el) === "br";
    return !!BLOCK_TAGS[tag(el)];
  }
  function selfHidden(el, style, layout) {
    if (el.hidden || el.getAttribute("aria-hidden") === "true") return true;
    if (tag(el) === "input" && String(el.type).toLowerCase() === "hidden") return true;
    if (style && (style.display === "none" || style.visibility === "hidden")) return true;
    return !layout && !!(el.style && el.style.display === "none");
  }
  // The page as one stream in document order: text, and each interactive
  // element in its place as a marker (its own text is its name, so it is not
  // repeated). Read from the top, or after an element and some characters
  // (a continuation); cut at maxElements elements or maxText characters.
  function collect(cmd, after) {
    var layout = cmd.layout !== false;
    var skip = Math.max(0, Number(cmd.textFrom) || 0);
    var st = { started: !after, skipped: 0, len: 0, since: 0, cut: false, moreElements: 0, moreText: 0 };
    var out = [];
    var listed = [];
    function text(raw) {
      if (!st.started) return;
      var s = String(raw).replace(/\s+/g, " ");
      if (!s) return;
      if (st.skipped < skip) {
        var take = Math.min(s.length, skip - st.skipped);
        st.skipped += take;
        s = s.slice(take);
        if (!s) return;
      }
      if (st.cut) { st.moreText += s.length; return; }
      if (st.len + s.length > cmd.maxText) {
        var part = cmd.maxText - st.len;
        out.push(s.slice(0, part));
        st.len += part; st.since += part; st.moreText += s.length - part; st.cut = true;
        return;
      }
      out.push(s); st.len += s.length; st.since += s.length;
    }
    function brk() { if (st.started && !st.cut && out.length && out[out.length - 1] !== "\n") out.push("\n"); }
    function element(el) {
      if (!st.started || st.skipped < skip) return;
      if (st.cut || listed.length >= cmd.maxElements) { st.cut = true; st.moreElements++; return; }
      out.push("\uE000" + listed.length + "\uE001");
      listed.push(el);
      st.since = 0;
    }
    function walk(node, inLabel) {
      if (node.nodeType === 3) { if (!inLabel) text(node.nodeValue); return; }
      if (node.nodeType !== 1) return;
      var el = node;
      var t = tag(el);
      if (SKIP_TAGS[t]) return;
      if (el === after) { st.started = true; return; }
      var style = w.getComputedStyle ? w.getComputedStyle(el) : null;
      if (selfHidden(el, style, layout)) return;
      var block = isBlock(el, style);
      if (block) brk();
      var interactive = el.matches(INTERACTIVE) || shadowControls(el);
      if (interactive && layout) { var r = el.getBoundingClientRect(); if (r.width === 0 && r.height === 0) interactive = false; }
      if (interactive) element(el);
      if (!interactive || (t !== "select" && t !== "textarea" && t !== "input" && el.querySelector(INTERACTIVE))) {
        var control = t === "label" ? el.control : null;
        // A label's text is its control's name, listed with the control.
        var labels = inLabel || !!(control && !hidden(control, layout)) || namers.indexOf(el) >= 0;
        for (var c = el.firstChild; c; c = c.nextSibling) walk(c, labels);
      }
      if (block) brk();
    }
    // Text that names a listed control through aria-labelledby is read with the control, not twice.
    var namers = [];
    var labelled = doc.querySelectorAll("[aria-labelledby]");
    for (var n = 0; n < labelled.length; n++) {
      if (!labelled[n].matches(INTERACTIVE) || hidden(labelled[n], layout)) continue;
      String(labelled[n].getAttribute("aria-labelledby")).split(/\s+/).forEach(function (id) { var m = id && doc.getElementById(id); if (m && !m.contains(labelled[n])) namers.push(m); });
    }
    if (doc.body) walk(doc.body, false);
    var joined = out.join("").replace(/[ \t]*\n[ \t]*/g, "\n").replace(/ {2,}/g, " ").replace(/\n{2,}/g, "\n").trim();
    var continuation = st.cut ? { afterIndex: listed.length ? listed.length - 1 : -1, textFrom: listed.length ? st.since : skip + st.len, moreElements: st.moreElements, moreText: st.moreText } : null;
    return {
      data: {
        url: String(w.location.href),
        title: clean(doc.title, 200),
        text: joined,
        textTruncated: st.moreText > 0,
        elements: listed.map(function (el) { return describe(el, layout); }),
        omitted: st.moreElements,
        continuation: continuation,
      },
      nodes: listed,
    };
  }
  // The emulator stands in for the input devices: its events are the user's.
  var TRUSTED_TYPES = ["click", "mousedown", "mouseup", "mouseover", "mouseenter", "mousemove", "keydown", "keypress", "keyup", "input", "change", "beforeinput"];
  function marked(e) { try { Object.defineProperty(e, "isTrusted", { value: true }); } catch (_) { /* Chromium's own */ } }
  function asUser(cmd, run) {
    if (!cmd.trusted) return run();
    TRUSTED_TYPES.forEach(function (t) { w.addEventListener(t, marked, true); });
    try { return run(); } finally { TRUSTED_TYPES.forEach(function (t) { w.removeEventListener(t, marked, true); }); }
  }
  function fire(el, type, init) {
    var Ctor = type.indexOf("key") === 0 && w.KeyboardEvent ? w.KeyboardEvent : type.indexOf("mouse") === 0 && w.MouseEvent ? w.MouseEvent : w.Event;
    var props = { bubbles: true, cancelable: true, composed: true };
    for (var k in init || {}) props[k] = init[k];
    return el.dispatchEvent(new Ctor(type, props));
  }
  function setValue(el, value) {
    // Through the prototype's setter, so frameworks that track the value see the change.
    var proto = tag(el) === "textarea" ? w.HTMLTextAreaElement : tag(el) === "select" ? w.HTMLSelectElement : w.HTMLInputElement;
    var desc = proto && Object.getOwnPropertyDescriptor(proto.prototype, "value");
    if (desc && desc.set) desc.set.call(el, value); else el.value = value;
  }
  function unsupported(message) { return { error: { code: "UNSUPPORTED", message: message + " Use computer_observe and computer_act on its bbox instead." } }; }
  function editable(el) {
    var t = tag(el);
    if (t === "textarea") return true;
    if (el.isContentEditable) return true;
    if (t !== "input") return false;
    var type = String(el.type || "text").toLowerCase();
    return ["text", "search", "email", "url", "tel", "password", "number", ""].indexOf(type) >= 0;
  }
  function boxChecked(el) {
    var type = tag(el) === "input" ? String(el.type).toLowerCase() : "";
    return type === "checkbox" || type === "radio" ? !!el.checked : el.getAttribute("aria-checked") === "true";
  }
  function covers(el, hit) {
    if (!hit) return false;
    if (hit === el || el.contains(hit)) return true;
    var label = hit.closest ? hit.closest("label") : null;
    return !!(label && label.control === el);
  }
  // Where a trusted click would land: the element's centre, scrolled into
  // view, and only if the element itself (or its label) is what is there.
  function locate(el, cmd) {
    if (cmd.want !== undefined) {
      var type = tag(el) === "input" ? String(el.type).toLowerCase() : "";
      var role = el.getAttribute("role");
      if (type !== "checkbox" && type !== "radio" && role !== "checkbox" && role !== "switch" && role !== "radio") return unsupported("check works on checkboxes, radios and switches only.");
      if (!cmd.want && (type === "radio" || role === "radio")) return unsupported("A radio button cannot be unchecked; check another option of its group.");
      if (boxChecked(el) === cmd.want) return { done: true, progress: [cmd.want ? "checked" : "unchecked"] };
    }
    var b = el.getBoundingClientRect();
    if (b.width === 0 && b.height === 0) return { error: { code: "CONFLICT", message: "The element has no size on screen, so nothing can click it." } };
    var x = Math.min(Math.max(b.left + b.width / 2, 1), w.innerWidth - 1);
    var y = Math.min(Math.max(b.top + b.height / 2, 1), w.innerHeight - 1);
    var hit = doc.elementFromPoint(x, y);
    if (!covers(el, hit)) {
      var what = hit ? roleOf(hit) + " " + tag(hit) + (nameOf(hit) ? ' "' + clean(nameOf(hit), 60) + '"' : "") : "nothing";
      return { error: { code: "CONFLICT", message: "Another element covers it on screen (" + what + " at " + Math.round(x) + "," + Math.round(y) + "); nothing was clicked. Close or dismiss what covers it (snapshot to find it), then try again." } };
    }
    return { point: { x: x, y: y }, progress: [] };
  }
  function perform(el, cmd) {
    if (!el || !el.isConnected || el.ownerDocument !== doc) return { error: { code: "STALE_REF", message: "stale" } };
    var t = tag(el);
    if (t === "iframe" || t === "frame") return unsupported("This element is a frame: its content is another document the page tools cannot reach.");
    if (shadowControls(el) && !el.matches(INTERACTIVE)) return unsupported("This control lives in a shadow DOM the page tools do not enter.");
    var purpose = cmd.purpose || cmd.action;
    if (purpose !== "scroll_into_view" && purpose !== "hover" && purpose !== "typing-ok" && (el.disabled || el.getAttribute("aria-disabled") === "true")) return { error: { code: "CONFLICT", message: "The element is disabled; do what enables it first, then snapshot again." } };
    if (el.scrollIntoView && cmd.layout !== false && purpose !== "typing-ok" && purpose !== "checked-is") el.scrollIntoView({ block: "center", inline: "center" });
    switch (cmd.action) {
      case "locate":
        return locate(el, cmd);
      case "checked-is": {
        var on = boxChecked(el);
        return on === cmd.want ? { progress: [cmd.want ? "checked" : "unchecked"] } : { progress: ["clicked"], error: { code: "CONFLICT", message: "The page did not let the box change." } };
      }
      case "typing-ok":
        if (cmd.start && w.navigation && !w.__agentPageWatch) {
          w.__agentPageWatch = { navigated: false };
          w.navigation.addEventListener("navigate", function () { w.__agentPageWatch.navigated = true; });
        }
        if (cmd.start && w.__agentPageWatch) w.__agentPageWatch.navigated = false;
        return { ok: el.isConnected && el.ownerDocument === w.document && String(w.location.href) === String(cmd.href || w.location.href) && !(w.__agentPageWatch && w.__agentPageWatch.navigated), href: String(w.location.href), focused: doc.activeElement === el, password: isPassword(el) };
      case "scroll_into_view":
        return { progress: ["scrolled into view"] };
      case "hover":
        fire(el, "mouseover"); fire(el, "mouseenter", { bubbles: false }); fire(el, "mousemove");
        return { progress: ["hovered"] };
      case "click":
        if (el.focus) el.focus();
        fire(el, "mousedown"); fire(el, "mouseup");
        el.click();
        return { progress: ["clicked"] };
      case "check":
      case "uncheck": {
        var want = cmd.action === "check";
        var type = t === "input" ? String(el.type).toLowerCase() : "";
        var role = el.getAttribute("role");
        if (type === "checkbox" || type === "radio") {
          if (!want && type === "radio") return unsupported("A radio button cannot be unchecked; check another option of its group.");
          if (!!el.checked !== want) el.click();
          return !!el.checked === want ? { progress: [want ? "checked" : "unchecked"] } : { progress: ["clicked"], error: { code: "CONFLICT", message: "The page did not let the box change." } };
        }
        if (role === "checkbox" || role === "switch" || role === "radio") {
          if ((el.getAttribute("aria-checked") === "true") !== want) el.click();
          return { progress: ["clicked"] };
        }
        return unsupported("check works on checkboxes, radios and switches only.");
      }
      case "select": {
        if (t !== "select") return unsupported("select works on <select> elements only; for custom dropdowns click the control, snapshot, and click the option.");
        var wanted = String(cmd.value);
        var options = Array.prototype.slice.call(el.options);
        var match = options.filter(function (o) { return clean(o.label || o.text, 500) === clean(wanted, 500); })[0] || options.filter(function (o) { return o.value === wanted; })[0];
        if (!match) return { error: { code: "INVALID_ARGUMENT", message: "No option is labelled or valued \"" + clean(wanted, 60) + "\"; options: " + options.slice(0, 25).map(function (o) { return clean(o.label || o.text, 40); }).join(", ") } };
        if (match.disabled) return { error: { code: "CONFLICT", message: "That option is disabled." } };
        if (el.focus) el.focus();
        setValue(el, match.value);
        match.selected = true;
        fire(el, "input"); fire(el, "change");
        return { progress: ["selected"] };
      }
      case "focus-for-typing": {
        if (!cmd.anyElement && !editable(el)) return unsupported("fill and type work on text fields only.");
        if (el.focus) el.focus();
        if (cmd.clear) {
          if (el.isContentEditable) el.textContent = ""; else setValue(el, "");
          fire(el, "input");
        }
        return { progress: [cmd.clear ? "focused and cleared" : "focused"] };
      }
      case "type-chars": {
        if (doc.activeElement !== el && el.focus) el.focus();
        var chars = Array.from(String(cmd.value));
        // A navigation the page starts while we type (an input handler that
        // leaves) stops typing: the rest would land on a page that is going away.
        if (w.navigation && !w.__agentPageWatch) {
          w.__agentPageWatch = { navigated: false };
          w.navigation.addEventListener("navigate", function () { w.__agentPageWatch.navigated = true; });
        }
        if (w.__agentPageWatch) w.__agentPageWatch.navigated = false;
        var startHref = String(w.location.href);
        for (var c = 0; c < chars.length; c++) {
          if ((w.__agentPageWatch && w.__agentPageWatch.navigated) || String(w.location.href) !== startHref || !el.isConnected || el.ownerDocument !== w.document) return { progress: [], typed: c, navigated: true };
          var ch = chars[c];
          if (!fire(el, "keydown", { key: ch })) { fire(el, "keyup", { key: ch }); continue; }
          fire(el, "keypress", { key: ch });
          if (el.isContentEditable) el.textContent += ch; else setValue(el, String(el.value) + ch);
          fire(el, "input", { data: ch, inputType: "insertText" });
          fire(el, "keyup", { key: ch });
        }
        return { progress: [] , typed: chars.length };
      }
      case "finish-typing":
        fire(el, "change");
        return { progress: [] };
      case "press": {
        var key = String(cmd.value);
        if (el.focus) el.focus();
        var allowed = fire(el, "keydown", { key: key });
        fire(el, "keyup", { key: key });
        // Synthetic key events do nothing by default, so Enter in a form field submits as a browser would.
        if (allowed && key === "Enter" && el.form && tag(el) === "input") {
          if (el.form.requestSubmit) el.form.requestSubmit(); else el.form.submit();
        } else if (allowed && (key === "Enter" || key === " ") && (t === "button" || t === "a")) el.click();
        return { progress: ["pressed " + key] };
      }
    }
    return unsupported("The action " + cmd.action + " is not supported.");
  }
  try {
    if (command.op === "collect") return collect(command, target);
    if (command.op === "perform") return asUser(command, function () { return perform(target, command); });
    if (command.op === "alive") return { alive: !!(target && target.isConnected && target.ownerDocument === doc) };
    return { error: { code: "INVALID_ARGUMENT", message: "unknown page script op" } };
  } catch (e) {
    return { error: { code: "UNAVAILABLE", message: "The page script failed: " + String(e && e.message || e).slice(0, 200) } };
  }
})`;
