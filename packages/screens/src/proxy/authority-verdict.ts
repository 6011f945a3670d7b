import { AgentComputerError } from "@agent-computer/core";

/** How a call to `ScreenAuthority.check` ended, as the proxy acts on it. */
export type AuthorityVerdict =
  | "allowed"
  | "authority_rejected"
  | "authority_unavailable"
  | "invalid_authority_response";

/**
 * Runs a check and classifies it, failing closed: only a promise that
 * resolves with nothing allows; FENCED_OUT, LEASE_LOST and NOT_FOUND reject;
 * UNAVAILABLE, TIMEOUT or no answer within `timeoutMs` are "unavailable";
 * anything else thrown or returned is a malformed answer.
 */
export async function authorityVerdict(check: () => unknown, timeoutMs: number): Promise<AuthorityVerdict> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = check();
    if (typeof (answer as PromiseLike<unknown> | undefined)?.then !== "function") return "invalid_authority_response";
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const settled = await Promise.race([Promise.resolve(answer).then((value) => ({ value })), timeout]);
    if (settled === "timeout") return "authority_unavailable";
    return settled.value === undefined ? "allowed" : "invalid_authority_response";
  } catch (error) {
    if (AgentComputerError.is(error, "FENCED_OUT", "LEASE_LOST", "NOT_FOUND")) return "authority_rejected";
    if (AgentComputerError.is(error, "UNAVAILABLE", "TIMEOUT")) return "authority_unavailable";
    return "invalid_authority_response";
  } finally {
    clearTimeout(timer);
  }
}
