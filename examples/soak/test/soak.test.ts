import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import type { SoakSummary } from "../src/soak-summary.js";
import { STEP_KINDS } from "../src/step-kind.js";

// The soak harness as CI runs it: `npm run soak` as a child process for
// half a minute with a 600 ms lease TTL, so every run outlives its lease
// many times over, then the JSON summary read back. Latency and memory
// are only reported here: thirty seconds on a shared machine say nothing
// about trends.

const root = fileURLToPath(new URL("../../..", import.meta.url));
const LEASE_TTL_MS = 600;
const missing = await dockerMissing();

async function soak(provider: "fake" | "docker", extra: string[] = []) {
  const dir = await mkdtemp(join(tmpdir(), "agent-computer-soak-test-"));
  const json = join(dir, "summary.json");
  const args = [
    join(root, "scripts", "soak.mjs"),
    provider,
    ...["--minutes", "0.5", "--lease-ttl-ms", String(LEASE_TTL_MS), "--seed", "11", "--report-every-s", "10"],
    ...["--no-latency-check", "--no-memory-check", "--json", json, ...extra],
  ];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  try {
    const summary = JSON.parse(await readFile(json, "utf8")) as SoakSummary;
    return { code, output, summary };
  } catch {
    throw new Error(`the soak wrote no summary (exit ${code}):\n${output}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function expectHealthy({ code, output, summary }: Awaited<ReturnType<typeof soak>>) {
  expect(summary.errors.firstUnexpected, output).toEqual([]);
  expect(summary.errors.unexpected).toBe(0);
  for (const kind of STEP_KINDS) {
    expect(summary.steps[kind].ran, `${kind} steps ran`).toBeGreaterThan(0);
    expect(summary.steps[kind].unexpected, `${kind} steps failed`).toBe(0);
  }
  const last = summary.checkpoints.at(-1);
  expect(last?.trigger).toBe("final");
  expect(summary.restore).toMatchObject({ ok: true, restoredRevision: last?.revision, mismatched: [] });
  expect(summary.restore?.files).toBeGreaterThan(0);
  expect(summary.restore?.matched).toBe(summary.restore?.files);
  expect(summary.leaseTtlMs).toBe(LEASE_TTL_MS);
  expect(summary.shortestRunTtls, "every run outlived 20 lease TTLs").toBeGreaterThanOrEqual(20);
  expect(code, output).toBe(0);
}

// The two soaks run at once, as CI's own soak step runs its two (.ci/run): the file runs alone, at
// the end, and its wall time was their sum (73 s), where each is half a minute of a sleeping harness.
describe.concurrent("soak harness", () => {
  it("fake: two bots for half a minute, a checkpoint midway, the last one restored", async () => {
    const result = await soak("fake", [
      "--checkpoint-every-min",
      "0.25",
      "--min-run-ttls",
      "20",
      "--min-checkpoints",
      "2",
    ]);
    expectHealthy(result);
    expect(result.summary.checks.find((check) => check.name.startsWith("every run at least 20"))).toMatchObject({
      ok: true,
      judged: true,
    });
    // The midway checkpoint ended both runs and started new ones.
    expect(result.summary.checkpoints.map((c) => c.trigger)).toEqual(["scheduled", "final"]);
    expect(result.summary.runs).toHaveLength(4);
    // The fake desktop's screens are live too: no error at all, expected or not.
    expect(result.summary.errors.byCode).toEqual({});
  }, 180_000);

  // Skipped without an engine or the computer image, except under CI, where that fails.
  const skip = missing !== undefined && !process.env.CI;
  (skip ? it.skip : it)(
    `docker: two bots for half a minute on a real computer, the last checkpoint restored${skip ? ` (skipped: ${missing})` : ""}`,
    async () => {
      if (missing) throw new Error(`CI is set and ${missing}`);
      const result = await soak("docker");
      expectHealthy(result);
      expect(result.summary.steps.screen.ok, "a person's screen opened").toBeGreaterThan(0);
      expect(result.summary.steps.takeover.ok).toBeGreaterThan(0);
      expect(result.summary.errors.byCode).toEqual({});
    },
    300_000,
  );
});

/** Why the Docker soak cannot run here (no engine, no computer image), as the Docker provider's suites decide. */
async function dockerMissing(): Promise<string | undefined> {
  const docker = new Docker();
  const answered = await Promise.race([
    docker.version().then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000).unref()),
  ]);
  if (!answered) return "no Docker engine answers; run .ci/docker-setup.sh";
  const image = await computerImageRef();
  return docker
    .getImage(image)
    .inspect()
    .then(
      () => undefined,
      () => `the computer image ${image} is not built (run: npx agent-computer-image build)`,
    );
}
