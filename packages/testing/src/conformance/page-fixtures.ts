/**
 * Fixture pages the page-browser conformance cases load, by file name:
 * served over loopback HTTP to the emulator and inside the computer to the
 * bot's Chromium.
 */
export const PAGE_FIXTURES: Readonly<Record<string, string>> = {
  "login.html": `<!doctype html><title>Sign in</title><body><h1>Sign in to Example</h1>
<form id="f"><label for="u">Username</label><input id="u" name="user" autocomplete="username">
<label for="p">Password</label><input id="p" type="password" name="pass">
<button type="button" onclick="document.getElementById('p').type = 'text'">Show password</button>
<button type="submit">Sign in</button></form><p id="out"></p><script>
document.getElementById("f").addEventListener("submit", function (e) {
  e.preventDefault();
  document.getElementById("out").textContent = "Welcome " + document.getElementById("u").value + " (" + document.getElementById("p").value.length + " characters)";
});
</script>`,
  "buttons.html": `<!doctype html><title>Many buttons</title><body><h1>Five hundred buttons</h1><div id="b"></div><script>
var html = "";
for (var i = 1; i <= 500; i++) html += '<button onclick="this.textContent=\\'done\\'">Button ' + i + '</button><br>';
document.getElementById("b").innerHTML = html;
</script>`,
  "list.html": `<!doctype html><title>Fruit list</title><body><h1>Fruit</h1><button id="r">Re-render</button><ul id="l"></ul><script>
var fruit = ["Apple", "Banana", "Cherry"];
function render() {
  document.getElementById("l").innerHTML = fruit.map(function (f) { return "<li>" + f + ' <button class="rm">Remove ' + f + "</button></li>"; }).join("");
  document.querySelectorAll(".rm").forEach(function (b) { b.onclick = function () { b.textContent = "Removed"; }; });
}
render();
document.getElementById("r").onclick = function () { render(); };
</script>`,
  "iframe.html": `<!doctype html><title>Checkout</title><body><h1>Checkout</h1>
<iframe title="Card details" srcdoc="<form><label>Card number <input name=card></label><button>Pay</button></form>" style="width:400px;height:120px"></iframe>
<button>Back</button>`,
  "choices.html": `<!doctype html><title>Preferences</title><body><h1>Preferences</h1>
<label for="freq">Email frequency</label><select id="freq"><option value="d">Daily</option><option value="w">Weekly</option><option value="n">Never</option></select>
<label><input type="checkbox" id="terms"> I accept the terms</label><p id="state"></p>
<button aria-pressed="true">Bold</button><button aria-pressed="false">Italic</button>
<div role="tablist"><button role="tab" aria-selected="false">General</button><button role="tab" aria-selected="true">Privacy</button></div><script>
function show() { document.getElementById("state").textContent = "Frequency " + document.getElementById("freq").value + ", terms " + document.getElementById("terms").checked; }
document.getElementById("freq").addEventListener("change", show);
document.getElementById("terms").addEventListener("change", show);
</script>`,
  // Accepts only the user's own input (isTrusted): synthetic events are ignored, as on many real sites.
  "trusted.html": `<!doctype html><title>Trusted only</title><body><h1>Trusted input only</h1>
<label for="name">Name</label><input id="name"><button id="go">Go</button><p id="log">Nothing yet</p><script>
var typed = "";
document.getElementById("name").addEventListener("keydown", function (e) { if (e.isTrusted && e.key.length === 1) typed += e.key; });
document.getElementById("go").addEventListener("click", function (e) {
  document.getElementById("log").textContent = e.isTrusted ? "Trusted click, typed " + typed : "Ignored a synthetic click";
});
</script>`,
  // A cookie banner laid over the button: clicking the button's box would hit the banner.
  "overlay.html": `<!doctype html><title>Covered</title><body style="margin:0"><h1>Covered button</h1>
<button id="buy" style="position:absolute;top:200px;left:40px;width:200px;height:40px">Buy now</button>
<div id="banner" style="position:fixed;inset:0;background:rgba(0,0,0,.5)"><button id="ok" style="margin:400px 0 0 40px">Accept cookies</button></div>
<p id="log">Not bought</p><script>
document.getElementById("buy").onclick = function () { document.getElementById("log").textContent = "Bought"; };
document.getElementById("ok").onclick = function () { document.getElementById("banner").remove(); };
</script>`,
  // A single-page app: each click re-renders only the rows whose data changed, as keyed renderers do.
  "spa.html": `<!doctype html><title>Tasks</title><body><h1>Tasks</h1><nav><a href="#inbox">Inbox</a> <a href="#done">Done</a></nav>
<label for="pw">Password</label><input id="pw" type="password" value="hunter2-very-secret">
<p id="count"></p><ul id="l"></ul><script>
var tasks = []; for (var i = 1; i <= 30; i++) tasks.push({ id: i, title: "Task " + i, done: false, v: 0 });
var rows = {};
function row(t) { var li = document.createElement("li"); li.innerHTML = t.title + (t.done ? " (done)" : "") + ' <button>' + (t.done ? "Reopen " : "Finish ") + t.title + "</button>"; li.querySelector("button").onclick = function () { t.done = !t.done; t.v++; render(); }; li.dataset.v = t.v; return li; }
function render() {
  var list = document.getElementById("l");
  tasks.forEach(function (t, i) {
    var old = rows[t.id];
    if (old && old.dataset.v === String(t.v)) return;
    var fresh = row(t);
    if (old) list.replaceChild(fresh, old); else list.appendChild(fresh);
    rows[t.id] = fresh;
  });
  document.getElementById("count").textContent = tasks.filter(function (t) { return t.done; }).length + " of 30 done";
}
render();
</script>`,
  "table300.html": `<!doctype html><title>Orders</title><body><h1>All orders</h1><table><tbody id="t"></tbody></table><script>
var html = "";
for (var i = 1; i <= 300; i++) html += "<tr><td>Order " + i + "</td><td>Customer " + i + "</td><td>$" + (i * 7) + ".00</td><td><button>Open order " + i + "</button></td></tr>";
document.getElementById("t").innerHTML = html;
</script>`,
  "links200.html": `<!doctype html><title>Directory</title><body><h1>Directory</h1><div id="d"></div><script>
var html = "";
for (var i = 1; i <= 200; i++) html += '<p><a href="#p' + i + '">Page ' + i + "</a> is about topic " + i + ".</p>";
document.getElementById("d").innerHTML = html;
</script>`,
  // Leaves the page as soon as three characters are typed, as a search box
  // that jumps to results would.
  "leave.html": `<!doctype html><title>Quick search</title><body><label for="q">Search</label><input id="q"><script>
document.getElementById("q").addEventListener("input", function (e) {
  if (e.target.value.length >= 3) location.href = "choices.html";
});
</script>`,
};
