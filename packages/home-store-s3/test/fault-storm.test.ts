import { mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContentKeyring, MemoryHomeRecords, ObjectAgentHomeStore } from "../src/index.js";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.js";
import { generationOf, writeGeneration } from "./generation.js";
import { type LocalS3, s3ConfigFor, startLocalS3 } from "./local-s3.js";

// A fault storm on the real AWS SDK against a real S3 server (s3rver),
// through a reverse proxy on real sockets (fault-proxy.ts). One request in
// five fails: 500, 503 SlowDown, a TCP reset, or a stall the client's
// request timeout must end. Each checkpoint completes or fails typed within
// its deadline, and the last committed revision always restores whole.

const DEADLINE_MS = 20_000;
let s3: LocalS3;
let proxy: FaultProxy;
let base: string;
/** calm: all pass; storm: one in five fails; stalled uploads: every PUT stalls. */
let weather: "calm" | "storm" | "stalled uploads" = "calm";
const injected = { "500": 0, slowDown: 0, reset: 0, stall: 0, passed: 0 };
const faults = ["500", "slowDown", "reset", "stall"] as const;

beforeAll(async () => {
  s3 = await startLocalS3("storm-homes");
  base = mkdtempSync(join(tmpdir(), "home-store-s3-storm-"));
  proxy = await startFaultProxy(s3.port, (request) => {
    if (weather === "stalled uploads" && request.method === "PUT") return "stall";
    if (weather !== "storm" || Math.random() >= 0.2) {
      injected.passed++;
      return "pass";
    }
    const fault = faults[Math.floor(Math.random() * faults.length)] as (typeof faults)[number];
    injected[fault]++;
    return fault;
  });
});
afterAll(async () => {
  await proxy.close();
  await s3.close();
  await rm(base, { recursive: true, force: true });
});

/** The idle limit the store sets on clients it builds (IDLE_SOCKET_MS), shortened: a stall is given up and retried. */
const SHORT_IDLE_LIMIT = { socketTimeout: 1500, connectionTimeout: 1000 };

function storeFor(
  records: MemoryHomeRecords,
  format: 1 | 2,
  dataDir: string,
  requestHandler: object = SHORT_IDLE_LIMIT,
) {
  return new ObjectAgentHomeStore({
    s3: new S3Client({ ...s3ConfigFor(proxy.port), maxAttempts: 4, requestHandler }),
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

describe("S3 fault storm (the real SDK through a fault proxy, 20% of requests fail)", () => {
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
        weather = "storm";
        const started = Date.now();
        const result = await writer
          .checkpoint({ homeKey, source: { dir: source }, ctx: { deadline: started + DEADLINE_MS } })
          .then(
            (checkpoint) => checkpoint,
            (error: unknown) => error,
          );
        weather = "calm";
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
      console.info(`fault-storm format ${format}`, JSON.stringify({ outcomes, injected }));
      // The storm really hit, and the SDK's retries carried most checkpoints through it.
      expect(injected["500"] + injected.slowDown + injected.reset + injected.stall).toBeGreaterThan(10);
      // A checkpoint fails only where one request met four faults in a row (about 1 in 30 here).
      expect(outcomes.filter((o) => o === "committed").length).toBeGreaterThan(7);
    }, 400_000);

    it(`format ${format}: a checkpoint whose uploads all stall, on a client with no idle limit, ends typed at its deadline`, async () => {
      const records = new MemoryHomeRecords();
      const homeKey = `stalled-${format}`;
      records.create({ homeKey, storageId: `st-${homeKey}` });
      // No socket timeout: only the operation's deadline can end a stalled request.
      const store = storeFor(records, format, join(base, `stalled-${format}`), { connectionTimeout: 1000 });
      const source = join(base, `stalled-source-${format}`);
      writeGeneration(source, 1, 160 * 1024);
      weather = "stalled uploads";
      const started = Date.now();
      const result = await store
        .checkpoint({ homeKey, source: { dir: source }, ctx: { deadline: started + 3000 } })
        .catch((error: unknown) => error);
      weather = "calm";
      expect(Date.now() - started).toBeLessThan(3000 + 2000);
      expect(result).toBeInstanceOf(AgentComputerError);
      expect(["TIMEOUT", "ABORTED"]).toContain((result as AgentComputerError).code);
      // Nothing was committed, and the next checkpoint in calm weather goes through.
      expect(
        await store.restore({ homeKey, target: { dir: join(base, `stalled-restored-${format}`) } }),
      ).toBeUndefined();
      expect((await store.checkpoint({ homeKey, source: { dir: source } })).revision).toBe(1);
    }, 60_000);
  }
});
