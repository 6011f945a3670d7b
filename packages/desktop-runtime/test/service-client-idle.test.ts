import type { AddressInfo } from "node:net";
import { newGatewayNonce } from "@agent-computer/core";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { DesktopServiceClient } from "../src/service/desktop-service-client.js";
import { parseServiceMessage, serviceProof } from "../src/service/service-protocol.js";

// A stand-in for the resident service: the real one runs inside a computer
// (docker-desktop-service.test.ts drives it on the engine); this one speaks
// the same handshake (service-protocol.ts) on the host, so the test can
// count connections and wait out a short idle time.
async function fakeService() {
  let key = "";
  const opened: { closed: boolean }[] = [];
  const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((resolve) => server.once("listening", resolve));
  server.on("connection", (ws) => {
    const seen = { closed: false };
    opened.push(seen);
    ws.on("close", () => {
      seen.closed = true;
    });
    const challenge = newGatewayNonce();
    ws.send(JSON.stringify({ t: "challenge", nonce: challenge }));
    ws.on("message", (data) => {
      const message = parseServiceMessage(data);
      if (message?.t === "hello") {
        ws.send(JSON.stringify({ t: "welcome", proof: serviceProof(key, "service", message.nonce, challenge) }));
      } else if (message?.t === "call" && message.argv[0] !== "wait-forever") {
        ws.send(JSON.stringify({ t: "line", id: message.id, line: { argv: message.argv } }));
        ws.send(JSON.stringify({ t: "end", id: message.id }));
      }
    });
  });
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/service`;
  const endpoint = {
    url: async () => url,
    handOver: async (handed: string) => {
      key = handed;
    },
  };
  return { endpoint, opened, close: () => server.close() };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

describe("desktop service client: idle connections", () => {
  it("closes a connection with no call in flight after the idle time, and opens a new one for the next call", async () => {
    const service = await fakeService();
    cleanup.push(service.close);
    const client = new DesktopServiceClient(service.endpoint, 200);
    const call = () => client.call({ argv: ["list"], timeoutMs: 5_000, ctx: {} });
    expect((await call()).lines).toEqual([{ argv: ["list"] }]);
    expect((await call()).lines).toEqual([{ argv: ["list"] }]);
    expect(service.opened).toHaveLength(1); // calls close together share one connection
    await sleep(600);
    // A client whose machine was dropped (nobody calls close) holds no socket after the idle time.
    expect(service.opened[0]?.closed).toBe(true);
    expect((await call()).lines).toEqual([{ argv: ["list"] }]);
    expect(service.opened).toHaveLength(2);
    expect(service.opened[1]?.closed).toBe(false);
  });

  it("keeps a connection open while a call is in flight, however long it takes", async () => {
    const service = await fakeService();
    cleanup.push(service.close);
    const client = new DesktopServiceClient(service.endpoint, 100);
    await client.call({ argv: ["list"], timeoutMs: 5_000, ctx: {} });
    // A call the stand-in never answers: its own timeout ends it, not the idle close.
    const slow = client.call({ argv: ["wait-forever"], timeoutMs: 400, ctx: {} });
    await sleep(300);
    expect(service.opened[0]?.closed).toBe(false);
    await slow;
    await sleep(300);
    expect(service.opened[0]?.closed).toBe(true);
  });
});
