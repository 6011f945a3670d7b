import { parseArgs } from "node:util";

/** What one soak does; `parseSoakOptions` reads it from the command line. */
export interface SoakOptions {
  readonly provider: "fake" | "docker";
  /** How long the bots work, in minutes (a float: 0.5 is thirty seconds). */
  readonly minutes: number;
  /** Seeds each bot's choice of steps; printed so a run can be replayed. */
  readonly seed: number;
  /** The runtime's lease TTL; undefined keeps the runtime's default. */
  readonly leaseTtlMs: number | undefined;
  /** Minutes between checkpoints (all runs end, the last one saves, new runs start). */
  readonly checkpointEveryMin: number;
  /** Seconds between interval reports. */
  readonly reportEverySec: number;
  /** A bot's pause between steps, as a model's thinking time would be. */
  readonly pauseMs: number;
  /** A step that takes longer than this is aborted and counted as a HARNESS_TIMEOUT error. */
  readonly stepTimeoutSec: number;
  /** Where to write the summary as JSON. */
  readonly jsonFile: string | undefined;
  /** When false, the latency check is reported but does not fail the soak. */
  readonly latencyCheck: boolean;
  /** When false, the host memory and fd check is reported but does not fail the soak. */
  readonly memoryCheck: boolean;
  /** Every bot run must last at least this many lease TTLs (0: not checked). */
  readonly minRunTtls: number;
  /** At least this many checkpoints, the final one included, must commit (0: not checked). */
  readonly minCheckpoints: number;
}

export const USAGE = `Usage: npm run soak -- <fake|docker> [options]

  --minutes N               how long the bots work (float; default 1)
  --seed N                  seeds the steps each bot picks (default: random, printed)
  --lease-ttl-ms N          the runtime's lease TTL (default: the runtime's, 60000)
  --checkpoint-every-min N  minutes between checkpoints (float; default 3)
  --report-every-s N        seconds between interval reports (float; default 60)
  --pause-ms N              a bot's pause between steps (default 100)
  --step-timeout-s N        abort a step after this long (default 120)
  --json FILE               also write the summary as JSON
  --no-latency-check        report the latency check, do not fail on it
  --no-memory-check         report the host RSS and fd check, do not fail on it
  --min-run-ttls N          fail unless every bot run lasts at least N lease TTLs (default 0: not checked)
  --min-checkpoints N       fail unless at least N checkpoints commit, the final one included (default 0)`;

/** Thrown for a command line the harness cannot run; the message says what to change. */
export class UsageError extends Error {}

function number(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  check: (n: number) => boolean,
  rule: string,
): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || !check(n)) throw new UsageError(`--${name} ${String(raw)}: expected ${rule}.`);
  return n;
}

/** Reads the soak's options from `argv` (without node and the script). */
export function parseSoakOptions(argv: readonly string[]): SoakOptions {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [provider, ...extra] = positionals;
  if (provider !== "fake" && provider !== "docker")
    throw new UsageError(`Give the provider first: "fake" or "docker"${provider ? `, not "${provider}"` : ""}.`);
  if (extra.length > 0) throw new UsageError(`Unexpected arguments: ${extra.join(" ")}.`);
  const positive = (n: number) => n > 0;
  const integer = (n: number) => Number.isInteger(n) && n >= 0;
  return {
    provider,
    minutes: number(values, "minutes", 1, positive, "a number of minutes above 0"),
    seed: number(values, "seed", Math.floor(Math.random() * 2 ** 31), integer, "a non-negative integer"),
    leaseTtlMs:
      values["lease-ttl-ms"] === undefined
        ? undefined
        : number(values, "lease-ttl-ms", 0, (n) => Number.isInteger(n) && n >= 100, "an integer of at least 100"),
    checkpointEveryMin: number(values, "checkpoint-every-min", 3, positive, "a number of minutes above 0"),
    reportEverySec: number(values, "report-every-s", 60, (n) => n >= 1, "at least 1 second"),
    pauseMs: number(values, "pause-ms", 100, integer, "a non-negative integer"),
    stepTimeoutSec: number(values, "step-timeout-s", 120, (n) => n >= 1, "at least 1 second"),
    jsonFile: values.json,
    latencyCheck: !values["no-latency-check"],
    memoryCheck: !values["no-memory-check"],
    minRunTtls: number(values, "min-run-ttls", 0, integer, "a non-negative integer"),
    minCheckpoints: number(values, "min-checkpoints", 0, integer, "a non-negative integer"),
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      minutes: { type: "string" },
      seed: { type: "string" },
      "lease-ttl-ms": { type: "string" },
      "checkpoint-every-min": { type: "string" },
      "report-every-s": { type: "string" },
      "pause-ms": { type: "string" },
      "step-timeout-s": { type: "string" },
      json: { type: "string" },
      "no-latency-check": { type: "boolean" },
      "no-memory-check": { type: "boolean" },
      "min-run-ttls": { type: "string" },
      "min-checkpoints": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

/** Whether the command line asks for the usage text. */
export function wantsHelp(argv: readonly string[]): boolean {
  return argv.includes("--help") || argv.includes("-h");
}
