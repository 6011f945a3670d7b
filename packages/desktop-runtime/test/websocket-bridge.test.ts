import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createConnection, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { bridge } from "../computer/desktop/websocket-bridge.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

/**
 * A desktop side that writes as fast as it is let (like x11vnc sending
 * frames), a gateway-side bridge, and a websocket client: returns what the
 * test needs to watch the buffers.
 */
async function setup() {
  let produced = 0;
  let producing = true;
  const desktop = createServer((socket) => {
    const chunk = Buffer.alloc(64 * 1024, 7);
    const pump = () => {
      while (producing && socket.writable) {
        produced += chunk.length;
        if (!socket.write(chunk)) return void socket.once("drain", pump);
      }
    };
    socket.on("error", () => {});
    pump();
  });
  await new Promise<void>((resolve) => desktop.listen(0, "127.0.0.1", resolve));
  const desktopPort = (desktop.address() as AddressInfo).port;

  const wss = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024 });
  let serverSide: WebSocket | undefined;
  const http = createHttpServer();
  http.on("upgrade", (req, socket, head) => {
    const upstream: Socket = createConnection({ port: desktopPort, host: "127.0.0.1" });
    upstream.once("connect", () =>
      wss.handleUpgrade(req, socket, head, (ws) => {
        serverSide = ws;
        bridge(ws, upstream, () => {});
      }),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}/`);
  let received = 0;
  client.on("message", (data: Buffer) => {
    received += data.length;
  });
  await new Promise((resolve) => client.once("open", resolve));
  cleanup.push(() => {
    producing = false;
    client.terminate();
    http.close();
    desktop.close();
  });
  return {
    client,
    produced: () => produced,
    received: () => received,
    buffered: () => serverSide?.bufferedAmount ?? 0,
  };
}

describe("websocket bridge", () => {
  it("stops reading the desktop while a client does not read, and resumes when it does", async () => {
    const s = await setup();
    s.client.pause(); // a client that takes nothing
    await sleep(1500);
    const stalled = s.produced();
    await sleep(1000);
    // Nothing more left the desktop side: only kernel buffers and the bridge's bound hold data.
    expect(s.produced()).toBe(stalled);
    expect(s.buffered()).toBeLessThan(1024 * 1024 + 64 * 1024);
    expect(stalled).toBeLessThan(64 * 1024 * 1024);
    s.client.resume();
    await sleep(500);
    expect(s.received()).toBeGreaterThan(stalled / 2);
    expect(s.produced()).toBeGreaterThan(stalled);
  }, 20_000);
});
