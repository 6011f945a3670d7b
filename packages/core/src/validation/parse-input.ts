import type { z } from "zod";
import { AgentComputerError } from "../errors/agent-computer-error.js";

/**
 * Validates input that crosses a public boundary. Bad input becomes an
 * `INVALID_ARGUMENT` whose message names the path into the value, e.g.
 * `Invalid ExecRequest: at "timeoutMs": expected number, received string`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    const path = issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".");
    return `at "${path}": ${issue.message}`;
  });
  throw new AgentComputerError("INVALID_ARGUMENT", `Invalid ${what}: ${issues.join("; ")}`, {
    details: { issues: result.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
  });
}
