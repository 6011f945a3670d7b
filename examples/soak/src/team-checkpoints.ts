import { performance } from "node:perf_hooks";
import type { AgentHomeStore } from "@agent-computer/checkpoint";
import type { ComputerRuntime } from "@agent-computer/runtime";
import type { BotDriver } from "./bot-driver.js";
import type { ExpectedHome } from "./expected-home.js";
import type { SoakLedger } from "./soak-ledger.js";
import type { SoakSummary } from "./soak-summary.js";

/**
 * Checkpoints of the soak's Team computer. On a Team computer the last run
 * to end saves the home (`ComputerRuntime.runEnded`), so a checkpoint ends
 * every bot's run, then checks that the computer record and the home store
 * both moved to a new revision, and remembers what the harness had written
 * by then: what a restore of this checkpoint must give back.
 */
export class TeamCheckpoints {
  readonly taken: SoakSummary["checkpoints"][number][] = [];
  /** Whether every checkpoint committed a new revision. */
  allCommitted = true;
  /** How many checkpoints committed a new revision. */
  committed = 0;
  /** The harness's files as of the last committed checkpoint. */
  lastFiles: ReadonlyMap<string, string> | undefined;

  constructor(
    private readonly input: {
      runtime: ComputerRuntime;
      homeStore: AgentHomeStore;
      computerId: string;
      drivers: readonly BotDriver[];
      ledger: SoakLedger;
      expected: ExpectedHome;
    },
  ) {}

  /** Ends every run (the last end saves), checks the revision, and for a scheduled one starts new runs. */
  async take(trigger: "scheduled" | "final"): Promise<void> {
    const { runtime, homeStore, computerId, drivers, ledger, expected } = this.input;
    const started = performance.now();
    for (const driver of drivers) {
      await driver.endRun().catch((error: Error) => {
        const code = (error as { code?: unknown }).code;
        ledger.error({
          botId: driver.botId,
          step: "checkpoint",
          op: "run_end",
          code: typeof code === "string" ? code : "EXCEPTION",
          message: error.message,
        });
      });
    }
    const ms = performance.now() - started;
    ledger.latency("checkpoint", ms);
    const record = await runtime.leases.getComputer(computerId);
    const latest = record ? await homeStore.latest(record.homeKey) : undefined;
    const previous = this.taken.at(-1)?.revision ?? 0;
    const revision = record?.revision ?? 0;
    if (revision <= previous || latest?.revision !== revision) {
      this.allCommitted = false;
      ledger.error({
        botId: "-",
        step: "checkpoint",
        op: "checkpoint",
        code: "CHECKPOINT_MISSING",
        message: `after the runs ended the record holds revision ${revision} (before: ${previous}), the home store ${latest?.revision ?? "none"}`,
      });
    } else {
      this.committed += 1;
      this.lastFiles = expected.snapshot();
    }
    this.taken.push({
      atS: Math.round(ledger.now() / 100) / 10,
      trigger,
      revision,
      ms: Math.round(ms),
      files: latest?.files ?? null,
      bytes: latest?.bytes ?? null,
    });
    console.log(
      `  checkpoint (${trigger}) revision ${revision} in ${Math.round(ms)} ms${trigger === "scheduled" ? "; new runs start" : ""}`,
    );
    if (trigger === "scheduled") for (const driver of drivers) driver.startRun();
  }
}
