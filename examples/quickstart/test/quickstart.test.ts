import { spawnSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The quickstart (`npm run demo`'s second half) as a person runs it, on the
// fake provider: it completes, and its report reads as the README says: a
// line per step with the seconds since the start, what happens during a
// step indented under it, and the restored file's content last.
const quickstart = join(dirname(fileURLToPath(import.meta.url)), "..");

describe("the quickstart on the fake provider", () => {
  it("runs every step and prints a report: stamped step lines, details indented under them", async () => {
    const home = await mkdtemp(join(tmpdir(), "quickstart-"));
    const ran = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: quickstart,
      env: { ...process.env, SANDBOX_PROVIDER: "fake", HOME: home },
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(ran.stderr).toBe("");
    expect(ran.status).toBe(0);
    const lines = ran.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^Times are seconds since the quickstart started/);
    const stamped = lines.filter((line) => /^ +\d+\.\d s {2}/.test(line));
    const steps = stamped.filter((line) => /^ +\d+\.\d s {2}\S/.test(line)).map((l) => l.replace(/^ +\S+ s {2}/, ""));
    expect(steps).toContain("alpha: shell (starts the Team computer)");
    expect(steps).toContain("beta ends its run (the last one saves)");
    expect(steps).toContain("alpha: read_file notes.txt (replacement + restore first)");
    // Every step ends with its own "done in" line, indented two more.
    expect(stamped.filter((line) => /^ +\d+\.\d s {4}done in \d+ ms$/.test(line)).length).toBe(steps.length);
    // Events sit under their step, on their own lines: the replacement's events under the read that caused it.
    const read = stamped.findIndex((line) => line.endsWith("alpha: read_file notes.txt (replacement + restore first)"));
    const after = stamped.slice(read + 1, read + 6).join("\n");
    expect(after).toMatch(/^ +\d+\.\d s {6}event replaced, took \d+ ms/m);
    // Times never go back.
    const times = stamped.map((line) => Number.parseFloat(line));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(lines.at(-1)).toMatch(/^Restored file content: alpha's notes, /);
  }, 150_000);
});
