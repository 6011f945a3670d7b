import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { RfbTestClient, TerminalTestClient, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterEach, describe, expect, it } from "vitest";
import { createScreens, runtimeScreenAuthority } from "../src/index.js";

// Issue 46: offline, an app's tests drive a bot's screen and terminal
// through sealed capabilities and the screens proxy, on the fake provider
// (its loopback gateway serves RFB of the drawn screen and a simulated
// shell): no engine, no browser.
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function setup() {
  const dataDir = await temporaryDataDir();
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
  });
  const screens = createScreens({ authority: runtimeScreenAuthority(runtime), secret: randomBytes(32) });
  const server = createServer((req, res) => {
    if (!screens.handleRequest(req, res)) res.writeHead(404).end();
  });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const ws = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stops.push(async () => {
    await screens.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const workspaceId = `fake-screens-${Date.now().toString(36)}`;
  const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
  const run = runtime.startRun({ workspaceId, botId: "alpha" });
  await run.machine();
  await run.desktop();
  await run.end("completed");
  return { runtime, screens, ws, computerId };
}

describe("screens and the terminal on the fake provider, offline", () => {
  it("a person controls the screen and uses the terminal through the proxy; both end with the takeover", async () => {
    const { runtime, screens, ws, computerId } = await setup();
    const control = await runtime.takeover({ computerId, botId: "alpha", holder: "person:ada", ttlMs: 60_000 });
    const screen = await screens.issueScreenCapability({
      computerId,
      botId: "alpha",
      mode: "control",
      ttlMs: 60_000,
      control,
    });
    const viewer = await RfbTestClient.open({ url: `${ws}${screen.url}` });
    const init = await viewer.handshake();
    expect({ width: init.width, height: init.height }).toEqual({ width: 640, height: 400 });
    viewer.useRawEncoding();
    viewer.requestFrame(init.width, init.height, false);
    expect(await viewer.readFrame(32)).toBe(640 * 400 * 4);
    viewer.pointer(120, 80);
    const desktop = await runtime.desktopFor({ computerId, botId: "alpha" });
    await expect
      .poll(async () => (await desktop.observe(undefined, { includeImage: false })).cursor)
      .toEqual({ x: 120, y: 80 });

    const terminal = await screens.issueTerminalCapability({ computerId, botId: "alpha", ttlMs: 60_000, control });
    const shell = await TerminalTestClient.open({ url: `${ws}${terminal.url}` });
    const [, where] = await shell.run("echo at=$(basename $(pwd)) $((6*7))", /at=(\S+) 42/);
    expect(where).toBe("alpha");

    await runtime.releaseTakeover(control);
    expect((await shell.closed).code).toBeGreaterThanOrEqual(1000);
    expect((await viewer.closed).code).toBeGreaterThanOrEqual(1000);
  });
});
