import { mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { S3Client } from "@aws-sdk/client-s3";
import { delay, HttpResponse, http, passthrough } from "msw";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";
import { generationOf, writeGeneration } from "./generation.js";
import { type LocalS3, startLocalS3 } from "./local-s3.js";

// A fault storm on the real AWS SDK against a real S3 server (s3rver): msw
// sits in node:http, the only place a fault can be injected between the
// SDK and the server without a fake S3 (the mock is the faults, every
// other request passes through to s3rver). One request in five fails: 500,
// 503 SlowDown, a connection reset, or a stalled upload. Each checkpoint
// completes or fails typed within its deadline, and the last committed
// revision always restores whole.

const DEADLINE_MS = 20_000;
let s3: LocalS3;
let base: string;
let storm = false;
const injected = { "500": 0, slowDown: 0, reset: 0, stall: 0, passed: 0 };

const server = setupServer();

beforeAll(async () => {
  s3 = await startLocalS3("storm-homes");
  base = mkdtempSync(join(tmpdir(), "home-store-s3-storm-"));
  server.use(
    http.all(`http://127.0.0.1:${s3.port}/*`, async ({ request }) => {
      if (!storm || Math.random() >= 0.2) {
        injected.passed++;
        return passthrough();
      }
      const kind = Math.floor(Math.random() * 4);
      if (kind === 0) {
        injected["500"]++;
        return new HttpResponse("<Error><Code>InternalError</Code><Message>injected</Message></Error>", {
          status: 500,
          headers: { "content-type": "application/xml" },
        });
      }
      if (kind === 1) {
        injected.slowDown++;
        return new HttpResponse(
          "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
          {
            status: 503,
            headers: { "content-type": "application/xml" },
          },
        );
      }
      if (kind === 2) {
        injected.reset++;
        return HttpResponse.error();
      }
      // A stalled request (an upload part or chunk that stops moving): held past the client's request timeout.
      injected.stall++;
      await delay(request.method === "PUT" ? 4000 : 2500);
      return HttpResponse.error();
    }),
  );
  server.listen({ onUnhandledRequest: "bypass" });
});
afterAll(async () => {
  server.close();
  await s3.close();
  await rm(base, { recursive: true, force: true });
});

function storeFor(records: MemoryHomeRecords, format: 1 | 2, dataDir: string) {
  return new ObjectAgentHomeStore({
    s3: new S3Client({
      ...s3.config,
      maxAttempts: 4,
      requestHandler: { requestTimeout: 1500, connectionTimeout: 1000 },
    }),
    bucket: s3.bucket,
    dataDir,
    keyring: new ContentKeyring(Buffer.alloc(32, 7)),
    records,
    format,
    partBytes: 64 * 1024,
    abandonAfterMs: 0,
    chunkGraceMs: 10 * 60 * 1000,
  });
}

describe("S3 fault storm (msw on the real SDK, 20% of requests fail)", () => {
  for (const format of [1, 2] as const) {
    it(`format ${format}: 12 checkpoints complete or fail typed within their deadline, and the committed revision always restores`, async () => {
      for (const k of Object.keys(injected) as (keyof typeof injected)[]) injected[k] = 0;
      const records = new MemoryHomeRecords();
      const homeKey = `storm-${format}`;
      records.create({ homeKey, storageId: `st-${homeKey}` });
      const writer = storeFor(records, format, join(base, `writer-${format}`));
      const source = join(base, `source-${format}`);
      writeGeneration(source, 1, 160 * 1024);
      await writer.checkpoint({ homeKey, source: { dir: source } });
      let committed = 1;
      const outcomes: string[] = [];
      for (let generation = 2; generation <= 13; generation++) {
        writeGeneration(source, generation, 160 * 1024);
        storm = true;
        const started = Date.now();
        const result = await writer
          .checkpoint({ homeKey, source: { dir: source }, ctx: { deadline: started + DEADLINE_MS } })
          .then(
            (checkpoint) => checkpoint,
            (error: unknown) => error,
          );
        storm = false;
        // Within the deadline, plus the time an aborted request takes to unwind.
        expect(Date.now() - started).toBeLessThan(DEADLINE_MS + 5000);
        if (result instanceof Error) {
          expect(result).toBeInstanceOf(AgentComputerError);
          expect(["UNAVAILABLE", "ABORTED", "TIMEOUT", "CONFLICT"]).toContain((result as AgentComputerError).code);
          // No credentials or request details in what a caller logs.
          expect(result.message).not.toMatch(/S3RVER|Signature|x-amz/i);
          outcomes.push((result as AgentComputerError).code);
        } else {
          outcomes.push("committed");
          committed = generation;
        }
        // Nothing committed is lost: a fresh host restores exactly the last committed generation.
        const target = join(base, `restored-${format}-${generation}`);
        const reader = storeFor(records, format, join(base, `reader-${format}-${generation}`));
        await reader.restore({ homeKey, target: { dir: target } });
        expect(generationOf(target, 160 * 1024)).toBe(committed);
        expect(readFileSync(join(target, "d.txt"), "utf8")).toBe(`generation ${committed}\n`);
        await rm(target, { recursive: true, force: true });
      }
      // The storm really hit, and the SDK's retries carried most checkpoints through it.
      expect(injected["500"] + injected.slowDown + injected.reset + injected.stall).toBeGreaterThan(10);
      expect(outcomes.filter((o) => o === "committed").length).toBeGreaterThan(3);
    }, 400_000);
  }
});
