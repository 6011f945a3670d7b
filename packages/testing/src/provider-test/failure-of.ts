import { AgentComputerError } from "@agent-computer/core";
import { expect } from "vitest";

/** The AgentComputerError `promise` rejects with; the test fails when it resolves or rejects with anything else. */
export async function failureOf(promise: Promise<unknown>): Promise<AgentComputerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentComputerError);
  return error as AgentComputerError;
}
