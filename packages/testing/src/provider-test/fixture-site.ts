import { inflateSync } from "node:zlib";
import type { Machine } from "@agent-computer/core";

/** The port the fixture site listens on, on the computer's loopback. */
export const SITE_PORT = 8765;
export const SITE = `http://127.0.0.1:${SITE_PORT}`;

const PAGES: Record<string, string> = {
  // "Logging in" sets a persistent session cookie, as a real site's login would.
  "login.html": `<!doctype html><title>Login</title><body><h1 id="who"></h1><script>
const user = new URLSearchParams(location.search).get("user");
document.cookie = "session=" + user + "; max-age=86400; path=/";
document.getElementById("who").textContent = "Logged in as " + user;
</script>`,
  "whoami.html": `<!doctype html><title>Who am I</title><body><h1 id="who"></h1><script>
document.getElementById("who").textContent = document.cookie;
</script>`,
  // The whole viewport is one button that turns the page red.
  "click.html": `<!doctype html><title>Click me</title><style>html,body{margin:0;height:100%;background:#fff}
button{position:fixed;inset:0;width:100vw;height:100vh;border:0;background:transparent;font-size:40px}</style>
<body><button id="b" onclick="document.body.style.background='rgb(200,30,30)';this.textContent='clicked'">click</button>`,
  // A blue page that turns red where it is clicked: the screen tests read both colours off the viewer's canvas.
  "screen.html": `<!doctype html><title>Screen</title><style>html,body{margin:0;height:100%;background:rgb(20,120,220)}
button{position:fixed;inset:0;width:100vw;height:100vh;border:0;background:transparent;font-size:40px}</style>
<body><button id="b" onclick="document.body.style.background='rgb(200,30,30)'">click</button>`,
  // A box that moves every animation frame: the screens bench counts the frames a viewer gets.
  "animate.html": `<!doctype html><title>Animate</title><style>html,body{margin:0;height:100%;background:#223}
#box{position:fixed;top:200px;width:240px;height:240px;background:rgb(240,200,40)}</style><body><div id="box"></div><script>
const box = document.getElementById("box");
const step = (t) => { box.style.left = (Math.abs(((t / 4) % 1600) - 800)) + "px"; requestAnimationFrame(step); };
requestAnimationFrame(step);</script>`,
  "form.html": `<!doctype html><title>Form</title><body style="margin:0"><input id="field" style="position:fixed;left:0;top:0;width:100vw;height:100vh;font-size:30px">`,
  // Sets a cookie the moment it loads: the quiesce test exports right after.
  "late.html": `<!doctype html><title>Late cookie</title><body><script>
document.cookie = "late=" + new URLSearchParams(location.search).get("v") + "; max-age=86400; path=/";
</script>`,
};

/** Writes the fixture pages into the home and serves them on the computer's loopback with python3. */
export async function serveFixtureSite(machine: Machine): Promise<void> {
  for (const [name, html] of Object.entries(PAGES)) {
    await machine.files.write(`fixture-site/${name}`, new TextEncoder().encode(html));
  }
  const started = await machine.exec({
    shell: `cd fixture-site && setsid nohup python3 -m http.server ${SITE_PORT} --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
for i in $(seq 1 50); do curl -fs ${SITE}/login.html >/dev/null && exit 0; sleep 0.1; done; exit 1`,
  });
  if (started.exitCode !== 0) throw new Error("the fixture site did not come up");
}

/** The URLs of a bot's browser history, read from a copy of the profile's History database. */
export async function historyOf(machine: Machine, bot: string): Promise<string[]> {
  const result = await machine.exec({
    shell: `cp ".browser-profiles/${bot}/Default/History" /tmp/history-${bot} && python3 -c "import sqlite3,json; print(json.dumps([r[0] for r in sqlite3.connect('/tmp/history-${bot}').execute('select url from urls')]))"`,
  });
  if (result.exitCode !== 0)
    throw new Error(`cannot read the history of ${bot}: ${Buffer.from(result.stderr).toString()}`);
  return JSON.parse(Buffer.from(result.stdout).toString()) as string[];
}

/** Decodes an 8-bit RGB or RGBA PNG (all five filters) to read pixels in assertions. */
export function pixelsOf(png: Uint8Array): { width: number; height: number; at: (x: number, y: number) => number[] } {
  const buf = Buffer.from(png);
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 3;
  const idat: Buffer[] = [];
  while (offset < buf.length) {
    const length = buf.readUInt32BE(offset);
    const type = buf.toString("ascii", offset + 4, offset + 8);
    const body = buf.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      channels = body[9] === 6 ? 4 : 3;
    }
    if (type === "IDAT") idat.push(body);
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)] as number;
    for (let i = 0; i < stride; i++) {
      const x = raw[y * (stride + 1) + 1 + i] as number;
      const a = i >= channels ? (out[y * stride + i - channels] as number) : 0;
      const b = y > 0 ? (out[(y - 1) * stride + i] as number) : 0;
      const c = i >= channels && y > 0 ? (out[(y - 1) * stride + i - channels] as number) : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter] as number;
      out[y * stride + i] = (x + predictor) & 0xff;
    }
  }
  return {
    width,
    height,
    at: (x, y) => [...out.subarray((y * width + x) * channels, (y * width + x) * channels + 3)],
  };
}
