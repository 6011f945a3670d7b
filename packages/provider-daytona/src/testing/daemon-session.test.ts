import { Duplex } from "node:stream";
import { type ComputerContainers, HttpAnswer } from "@agent-computer/testing/emulator";
import { describe, expect, it } from "vitest";
import { SandboxDaemon } from "./daemon-session.js";

// The engine's side of the stand-in's exec, played by a stream: when a
// sandbox's container goes away just as the exec starts, the engine writes
// its own message ("OCI runtime exec failed: ...") where the stand-in's
// answers come. A real engine gives that only in a race (clean-clone CI run
// 33, daytona-faults.test.ts); a stream gives it every time.

/** One frame of the engine's multiplexed exec output, on stdout. */
const stdoutFrame = (text: string) => {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = 1;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
};

describe("SandboxDaemon", () => {
  it("answers a call 502 when the engine's own message comes instead of the stand-in's, with nothing thrown outside it", async () => {
    // What the daemon writes (its requests) goes nowhere; what it reads is what the test pushes.
    const engine = new Duplex({ read() {}, write: (_chunk, _encoding, done) => done() });
    const containers = { startCommand: async () => ({ stream: engine }) } as unknown as ComputerContainers;
    const daemon = await SandboxDaemon.start(containers, "gone", "computer");
    const call = daemon.call("exec", { command: "true" });
    engine.push(stdoutFrame("OCI runtime exec failed: exec failed: container is stopping\n"));
    const failure = await call.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(HttpAnswer);
    expect((failure as HttpAnswer).status).toBe(502);
  });
});
