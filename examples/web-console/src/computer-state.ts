import type { ComputerRuntime } from "@agent-computer/runtime";
import type { ScriptedBot } from "./scripted-bot.js";

/**
 * What the header says of the computer: `running` while its machine runs
 * here; `starting` while a bot's first calls provision or resume it;
 * `suspended` after it slept for idleness and `stopped` after a stop (the
 * next run resumes either from its saved home); `not started` when it never
 * ran (its first start failed), `not created` before any bot's run made it.
 */
export type ComputerState = "running" | "starting" | "suspended" | "stopped" | "not started" | "not created";

export async function computerState(
  runtime: ComputerRuntime,
  computerId: string,
  bots: readonly ScriptedBot[],
): Promise<ComputerState> {
  if (await runtime.runningMachine(computerId)) return "running";
  if (bots.some((bot) => bot.state === "starting")) return "starting";
  const record = await runtime.leases.getComputer(computerId);
  if (!record) return "not created";
  if (record.runs.length === 0) return "not started";
  return record.runs.at(-1)?.endReason === "idle" ? "suspended" : "stopped";
}
