import { statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CdpConnection, cdpJson } from "../computer/desktop/cdp-connection.js";
import { type StartedBridge, startDevtoolsBridge } from "../computer/desktop/devtools-pipe-bridge.js";

// The DevTools pipe bridge (computer/desktop/devtools-pipe-bridge.ts), with a
// browser stand-in that speaks --remote-debugging-pipe as Chromium does
// (commands on fd 3, answers and events on fd 4, each JSON ended by a NUL),
// and the in-computer client (cdp-connection.ts) over the bridge's socket:
// several clients that use the same ids at once each get their own answers,
// a slow call holds no other, and each page connection is a session of its
// own. Chromium itself behind the bridge runs in the Kubernetes display
// container's tests (provider-kubernetes, kubernetes-display-container).
const BROWSER = String.raw`
const fs = require("fs");
const out = fs.createWriteStream(null, { fd: 4 });
const send = (m) => out.write(JSON.stringify(m) + "\0");
let sessions = 0, buffered = "";
const answer = (m) => {
  const p = m.params || {};
  if (m.method === "Browser.getVersion") return { product: "Stand-in/1" };
  if (m.method === "Target.getTargets") return { targetInfos: [{ targetId: "T1", type: "page", title: "Blank", url: "about:blank" }] };
  if (m.method === "Target.attachToTarget") return { sessionId: "S" + ++sessions };
  return { method: m.method, sessionId: m.sessionId || null, value: p.value };
};
fs.createReadStream(null, { fd: 3 }).on("data", (chunk) => {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf("\0")) >= 0) {
    const m = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (m.sessionId) send({ method: "Stand.in", sessionId: m.sessionId, params: {} });
    setTimeout(() => send({ id: m.id, result: answer(m), ...(m.sessionId ? { sessionId: m.sessionId } : {}) }), (m.params && m.params.ms) || 0);
  }
}).on("end", () => process.exit(0));
`;

describe("devtools pipe bridge", () => {
  let dir: string;
  let bridge: StartedBridge;
  let endpoint: { cdpPort: number; devtoolsSocket: string };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "devtools-bridge-"));
    await writeFile(join(dir, "browser.js"), BROWSER);
    endpoint = { cdpPort: 0, devtoolsSocket: join(dir, "devtools.sock") };
    bridge = await startDevtoolsBridge(endpoint.devtoolsSocket, process.execPath, [join(dir, "browser.js")]);
  });
  afterAll(async () => {
    bridge?.stop();
    await bridge?.exited;
    await rm(dir, { recursive: true, force: true });
  });

  it("serves Chromium's endpoints on a socket only its owner may open", async () => {
    expect(statSync(endpoint.devtoolsSocket).mode & 0o777).toBe(0o600);
    const version = await cdpJson<{ product: string; webSocketDebuggerUrl: string }>(endpoint, "/json/version");
    expect(version).toMatchObject({
      product: "Stand-in/1",
      webSocketDebuggerUrl: expect.stringMatching(/\/devtools\/browser$/),
    });
    const list = await cdpJson<{ id: string; type: string; webSocketDebuggerUrl: string }[]>(endpoint, "/json/list");
    expect(list).toEqual([
      expect.objectContaining({
        id: "T1",
        type: "page",
        webSocketDebuggerUrl: expect.stringMatching(/\/devtools\/page\/T1$/),
      }),
    ]);
    const missing = await new Promise<number>((resolve) =>
      get({ socketPath: endpoint.devtoolsSocket, path: "/json/other" }, (res) => resolve(res.statusCode ?? 0)),
    );
    expect(missing).toBe(404);
  });

  it("answers clients that use the same ids at once each under its own, a slow call holding no other", async () => {
    const { webSocketDebuggerUrl } = await cdpJson<{ webSocketDebuggerUrl: string }>(endpoint, "/json/version");
    const [slow, quick] = await Promise.all([
      CdpConnection.open(webSocketDebuggerUrl, endpoint),
      CdpConnection.open(webSocketDebuggerUrl, endpoint),
    ]);
    try {
      const order: string[] = [];
      // Both connections number their first call 1.
      const slowCall = slow.call("Slow.call", { ms: 400, value: "slow" }).then((r) => {
        order.push("slow");
        return r;
      });
      const quickCall = quick.call("Quick.call", { value: "quick" }).then((r) => {
        order.push("quick");
        return r;
      });
      expect(await quickCall).toEqual({ method: "Quick.call", sessionId: null, value: "quick" });
      expect(await slowCall).toEqual({ method: "Slow.call", sessionId: null, value: "slow" });
      expect(order).toEqual(["quick", "slow"]);
    } finally {
      slow.close();
      quick.close();
    }
  });

  it("gives each page connection a session of its own, which it never has to name", async () => {
    const [page] = await cdpJson<{ webSocketDebuggerUrl: string }[]>(endpoint, "/json/list");
    const url = page?.webSocketDebuggerUrl as string;
    const [a, b] = await Promise.all([CdpConnection.open(url, endpoint), CdpConnection.open(url, endpoint)]);
    try {
      const [fromA, fromB] = (await Promise.all([
        a.call("Runtime.evaluate", { value: "a" }),
        b.call("Runtime.evaluate", { value: "b" }),
      ])) as { sessionId: string; value: string }[];
      expect(fromA?.value).toBe("a");
      expect(fromB?.value).toBe("b");
      expect(fromA?.sessionId).toMatch(/^S\d+$/);
      expect(fromB?.sessionId).toMatch(/^S\d+$/);
      expect(fromA?.sessionId).not.toBe(fromB?.sessionId);
    } finally {
      a.close();
      b.close();
    }
  });
});
