import { AgentComputerError } from "@agent-computer/core";
import { abortable } from "@agent-computer/core/provider-utils";
import type { Sandbox } from "@daytonaio/sdk";
import { daytonaFailure, isAuthFailure, isTransient, statusOf } from "./daytona-failure.js";

/**
 * States a sandbox passes through on its own; the wait goes on (the API's
 * SandboxState enum: @daytona/api-client src/models/sandbox-state.d.ts).
 */
const MOVING = new Set([
  "creating",
  "starting",
  "restoring",
  "stopping",
  "archiving",
  "pending_build",
  "building_snapshot",
  "pulling_snapshot",
  "resizing",
  "snapshotting",
  "forking",
  "pausing",
  "resuming",
  "unknown",
]);
/** States a start request leaves (a paused sandbox resumes through start). */
const STARTABLE = new Set(["stopped", "archived", "paused"]);
const POLL_MS = 250;

/** What a start needs to say and to keep out of messages. */
export interface StartContext {
  readonly ref: string;
  readonly secrets: Iterable<string>;
  /** Also bounded by the provider's start timeout. */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}

/** The error for a sandbox the API no longer has. */
export function sandboxGone(ref: string): AgentComputerError {
  return new AgentComputerError(
    "PROVIDER_GONE",
    `The Daytona sandbox behind ${ref} no longer exists (deleted at the provider); provision a replacement and restore its home.`,
  );
}

/**
 * Brings a sandbox to "started" and returns once it is: a stopped,
 * archived or paused one is started (resumed), one in a state change is
 * waited for. Transient
 * answers (502/503/504, 400/409 during a transition, a dropped connection)
 * are retried, and a start from archive may take longer than the server's
 * own 30 s wait: the call's deadline decides, not the server's. A 404 of
 * the sandbox itself is PROVIDER_GONE; a refused key is never that.
 */
export async function ensureStarted(sandbox: Sandbox, context: StartContext): Promise<void> {
  const until = Date.now() + context.timeoutMs;
  const { signal } = context;
  let last = "unknown";
  for (;;) {
    if (signal.aborted) throw signal.reason;
    if (Date.now() >= until) {
      throw new AgentComputerError(
        "TIMEOUT",
        `The Daytona sandbox behind ${context.ref} did not start within ${context.timeoutMs} ms (last state: ${last}); raise startTimeoutMs or try again.`,
      );
    }
    try {
      // Raced with the call's signal: the deadline ends the wait, not the SDK's own timeouts.
      await abortable(sandbox.refreshData(), signal);
      last = String(sandbox.state);
      if (last === "started") return;
      if (STARTABLE.has(last)) {
        // The SDK waits for "started" too; bounded by what is left of our own wait.
        const seconds = Math.max(1, Math.floor((until - Date.now()) / 1000));
        await abortable(sandbox.start(seconds), signal);
        continue;
      }
      if (last === "destroyed" || last === "destroying") throw sandboxGone(context.ref);
      if (last === "error" || last === "build_failed") {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The Daytona sandbox behind ${context.ref} is in state "${last}"${sandbox.errorReason ? ` (${sandbox.errorReason.slice(0, 200)})` : ""}; it cannot start.`,
          { retryable: false },
        );
      }
      if (!MOVING.has(last)) last = `${last} (unexpected)`;
    } catch (error) {
      if (AgentComputerError.is(error)) throw error;
      if (signal.aborted) throw signal.reason;
      if (isAuthFailure(error)) throw daytonaFailure(error, `start ${context.ref}`, context.secrets);
      if (statusOf(error) === 404) throw sandboxGone(context.ref);
      // The SDK's own wait gave up (its timeout) or a transition answered 502/400: look again.
      if (!isTransient(error) && !/timeout|timed out/i.test(String((error as Error)?.message))) {
        throw daytonaFailure(error, `start ${context.ref}`, context.secrets);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
