import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { type Machine, opContext } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { Sandbox as NovitaSandbox } from "novita-sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// Novita's SDK bounds a whole request, body included, by requestTimeoutMs,
// buffers uploads and ignores the caller's abort. With /files at 16 MiB/s
// and a 2 s request timeout, one request of a 50 MiB home cannot finish;
// the provider moves it in parts that each fit, and an abort stops the
// transfer at once.
const BANDWIDTH = 16 * 1024 * 1024;
const HOME_BYTES = 50 * 1024 * 1024;
const env = await e2bTestEnvironment("novita: transfers longer than a request", "novita", {
  filesBytesPerSecond: BANDWIDTH,
});
if (!env.missing) {
  const { emulator } = env;
  const provider = env.provider({ requestTimeoutMs: 2_000 });
  const owned: Machine[] = [];
  const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
  const collect = async (stream: Readable) => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const big = randomBytes(HOME_BYTES);
  let machine: Machine;

  describe("novita: transfers longer than a request", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("one request of 50 MiB cannot finish within the SDK's 2 s (the limit is real)", async () => {
      machine = await provider.provision({ computerId: "transfers", homeKey: `transfers-${Date.now()}` });
      owned.push(machine);
      const sandbox = await NovitaSandbox.connect(machine.ref.slice("novita:".length), {
        apiKey: env.apiKey,
        apiUrl: emulator.apiUrl,
        sandboxUrl: emulator.sandboxUrl,
        requestTimeoutMs: 2_000,
      } as Parameters<typeof NovitaSandbox.connect>[1]);
      const whole = await sandbox.files.write("/tmp/whole.bin", new Blob([big]), { requestTimeoutMs: 2_000 }).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(whole?.name).toMatch(/TimeoutError|AbortError/);
    }, 60_000);

    it("exports and imports a 50 MiB home byte for byte with requestTimeoutMs 2 s", async () => {
      await machine.files.write("big.bin", big);
      const started = Date.now();
      const exported = await collect(await machine.files.exportWorkspace());
      // 50 MiB at 16 MiB/s: longer than any one request may last (each 8 MiB part takes half a second).
      expect(Date.now() - started).toBeGreaterThan(3_000);
      expect(exported.length).toBeGreaterThan(HOME_BYTES);
      await machine.exec({ argv: ["rm", "-f", "big.bin"] });
      await machine.files.importWorkspace(Readable.from([exported]));
      expect(sha(await machine.files.read("big.bin"))).toBe(sha(big));
    }, 180_000);

    it("an export or import aborted mid-way stops within 1 s", async () => {
      for (const which of ["export", "import"] as const) {
        const aborter = new AbortController();
        const ctx = opContext({ signal: aborter.signal, timeoutMs: 120_000 });
        const work =
          which === "export"
            ? machine.files.exportWorkspace(ctx).then(collect)
            : machine.files.importWorkspace(Readable.from([big]), ctx);
        const failed = failureOf(work);
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const abortedAt = Date.now();
        aborter.abort(new Error(`${which} aborted by the test`));
        await failed;
        expect(Date.now() - abortedAt, which).toBeLessThan(1_000);
      }
      // The home is as it was: the aborted import changed nothing.
      expect(sha(await machine.files.read("big.bin"))).toBe(sha(big));
    }, 180_000);
  });
}
