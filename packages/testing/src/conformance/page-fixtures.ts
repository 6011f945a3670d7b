/**
 * Fixture pages the page-browser conformance cases load, by file name:
 * served over loopback HTTP to the emulator and inside the computer to the
 * bot's Chromium.
 */
export const PAGE_FIXTURES: Readonly<Record<string, string>> = {
  "login.html": `<!doctype html><title>Sign in</title><body><h1>Sign in to Example</h1>
<form id="f"><label for="u">Username</label><input id="u" name="user" autocomplete="username">
<label for="p">Password</label><input id="p" type="password" name="pass">
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
<label><input type="checkbox" id="terms"> I accept the terms</label><p id="state"></p><script>
function show() { document.getElementById("state").textContent = "Frequency " + document.getElementById("freq").value + ", terms " + document.getElementById("terms").checked; }
document.getElementById("freq").addEventListener("change", show);
document.getElementById("terms").addEventListener("change", show);
</script>`,
  // Leaves the page as soon as three characters are typed, as a search box
  // that jumps to results would.
  "leave.html": `<!doctype html><title>Quick search</title><body><label for="q">Search</label><input id="q"><script>
document.getElementById("q").addEventListener("input", function (e) {
  if (e.target.value.length >= 3) location.href = "choices.html";
});
</script>`,
};
