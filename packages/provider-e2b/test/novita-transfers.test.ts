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
  /** The home as an export gave it: a real archive for the import tests. */
  let exported: Buffer;

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
      exported = await collect(await machine.files.exportWorkspace());
      // 50 MiB at 16 MiB/s: longer than any one request may last (each 8 MiB part takes half a second).
      expect(Date.now() - started).toBeGreaterThan(3_000);
      expect(exported.length).toBeGreaterThan(HOME_BYTES);
      await machine.exec({ argv: ["rm", "-f", "big.bin"] });
      await machine.files.importWorkspace(Readable.from([exported]));
      expect(sha(await machine.files.read("big.bin"))).toBe(sha(big));
    }, 180_000);

    it("an export or import aborted mid-way stops within 1 s", async () => {
      // Export: aborted while its bytes are being read.
      const exporting = new AbortController();
      const stream = await machine.files.exportWorkspace(opContext({ signal: exporting.signal, timeoutMs: 120_000 }));
      const reading = collect(stream).then(
        () => "finished",
        () => "failed",
      );
      await new Promise((resolve) => stream.once("data", resolve));
      let abortedAt = Date.now();
      exporting.abort(new Error("export aborted by the test"));
      expect(await reading).toBe("failed");
      expect(Date.now() - abortedAt, "export").toBeLessThan(1_000);
      // Import: aborted while its parts are being sent (a part's request under way).
      const uploads = () => emulator.calls.filter((c) => c.method === "POST" && c.path === "/files").length;
      const uploadsBefore = uploads();
      const importing = new AbortController();
      const failed = failureOf(
        machine.files.importWorkspace(
          Readable.from([exported]),
          opContext({ signal: importing.signal, timeoutMs: 120_000 }),
        ),
      );
      await expect.poll(uploads, { timeout: 60_000, interval: 20 }).toBeGreaterThan(uploadsBefore);
      abortedAt = Date.now();
      importing.abort(new Error("import aborted by the test"));
      await failed;
      expect(Date.now() - abortedAt, "import").toBeLessThan(1_000);
      // The home is as it was: the aborted import changed nothing.
      expect(sha(await machine.files.read("big.bin"))).toBe(sha(big));
    }, 180_000);
  });
}
