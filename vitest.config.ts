import { defineConfig } from "vitest/config";
import PlannedSequencer from "./test/support/planned-sequencer.js";

// One test run for the whole tree (docs/testing.md). Suites that need a
// real engine (Docker, Chromium, PostgreSQL) fail instead of skipping when
// CI is set.
//
// Side by side: WORKERS files at once, in the order PlannedSequencer makes
// from test/durations.json (slow files first, CPU-bound ones kept apart).
// Each file keeps to its own names, ports from the OS and its own database
// (docs/testing.md, "Side by side"). Files whose assertions time processes
// against each other run after the rest, one at a time, on a quiet machine.
//
// Two tiers: under CI (or AGENT_COMPUTER_TEST_FULL=1) every file runs; a
// contributor's `npm test` leaves out the long CPU-bound loops below and
// says so in its closing lines, beside every suite it skipped for a
// missing engine.
const WORKERS = Number(process.env.AGENT_COMPUTER_TEST_WORKERS ?? 3);
const FULL = Boolean(process.env.CI || process.env.AGENT_COMPUTER_TEST_FULL);

const ALL = [
  "packages/*/src/**/*.test.ts",
  "packages/*/test/**/*.test.ts",
  "examples/*/test/**/*.test.ts",
  "test/**/*.test.ts",
];

/**
 * Kill loops, crash loops and round trips of large homes: minutes of CPU
 * between them, and each proves its point by repetition. The full tier only.
 */
const LONG_LOOPS = [
  "packages/home-store-s3/test/crash-chunked.test.ts",
  "packages/home-store-s3/test/crash.test.ts",
  "packages/home-store-s3/test/fault-storm.test.ts",
  "packages/checkpoint/src/codec/checkpoint-round-trip.test.ts",
  "packages/checkpoint/src/codec/restore-home.crash.test.ts",
  "test/runtime-crash/runtime-crash.test.ts",
  "test/lease-contention/lease-contention-processes.test.ts",
  "examples/soak/test/soak.test.ts",
];

/**
 * Time processes against each other: the lease checker's 50 ms clock
 * tolerance for PostgreSQL, kills aimed inside a checkpoint timed a moment
 * before with leases of one second, kills aimed inside a restore timed by
 * a probe restore (beside CPU-bound files its 13 child restores outran
 * their two minutes), and Novita's transfers held to a 2 s request deadline
 * at a set bandwidth (side by side, a part's request waited on a starved
 * emulator past it), and the soak's 600 ms leases renewed every 200 ms
 * (side by side with 200 files, its worker's timers once stalled for 4 s
 * and every lease of the Docker soak was lost). These bounds hold on a
 * machine that is not starved, so these run last, alone.
 */
const ALONE = [
  "test/lease-contention/lease-contention-processes.test.ts",
  "test/runtime-crash/runtime-crash.test.ts",
  "packages/checkpoint/src/codec/restore-home.crash.test.ts",
  "packages/provider-e2b/test/novita-transfers.test.ts",
  "examples/soak/test/soak.test.ts",
];

const leftOut = FULL ? [] : LONG_LOOPS;

/** Where to also write vitest's JSON report, for scripts/test-durations.mjs (.ci/run sets it). */
const JSON_REPORT = process.env.AGENT_COMPUTER_TEST_JSON;

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // A poll waits for state that arrives asynchronously (a page's text, a
    // bot's state in the console). vitest's default gives up after 1 s,
    // which files sharing two cores outlast (web-console.test.ts failed so
    // in a side-by-side run); the value polled for is unchanged.
    expect: { poll: { timeout: 10_000 } },
    pool: "forks",
    // One temporary folder per run, removed at its end (test/support/run-temporary-folder.ts).
    globalSetup: ["./test/support/run-temporary-folder.ts"],
    reporters: [
      "default",
      [
        "./test/support/skipped-parts-reporter.ts",
        { leftOut, why: "a long CPU-bound loop: runs when CI or AGENT_COMPUTER_TEST_FULL is set" },
      ],
      ...(JSON_REPORT ? [["json", { outputFile: JSON_REPORT }] as const] : []),
    ],
    sequence: { sequencer: PlannedSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: "side-by-side",
          include: ALL,
          exclude: ["**/node_modules/**", ...ALONE, ...leftOut],
          maxWorkers: WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "alone",
          include: ALONE.filter((file) => !leftOut.includes(file)),
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          passWithNoTests: true,
        },
      },
    ],
  },
});
