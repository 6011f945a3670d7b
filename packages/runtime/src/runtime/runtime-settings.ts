import { AgentComputerError } from "@agent-computer/core";

/** Runtime settings an operator sets in the environment. */
export interface RuntimeSettings {
  screenLimit: number;
  idleMs: number;
  maxActiveMs: number;
}

/**
 * Reads `SANDBOX_TEAM_SCREEN_LIMIT` (default 0: no cap), `SANDBOX_IDLE_MS`
 * (default 15 minutes) and `COMPUTER_MAX_ACTIVE_MS` (default 2 hours; 0 =
 * off). A value that is not a non-negative integer is INVALID_ARGUMENT
 * naming the variable.
 */
export function runtimeSettingsFromEnv(env: Record<string, string | undefined>): RuntimeSettings {
  return {
    screenLimit: read(env, "SANDBOX_TEAM_SCREEN_LIMIT", 0),
    idleMs: read(env, "SANDBOX_IDLE_MS", 15 * 60_000),
    maxActiveMs: read(env, "COMPUTER_MAX_ACTIVE_MS", 2 * 3600_000),
  };
}

function read(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid environment variable ${name}: expected a non-negative integer.`,
    );
  }
  return value;
}
