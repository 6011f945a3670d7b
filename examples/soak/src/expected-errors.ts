/**
 * The only errors a soak expects. Everything else a step meets counts as
 * unexpected and fails the soak. Keep this list tiny: each entry is a
 * known limit of a provider, not a way to quiet a flaky step.
 */
export interface ExpectedError {
  readonly provider: "fake" | "docker";
  /** The operation that meets it (a tool name or a harness operation such as `screen_view`). */
  readonly op: string;
  readonly code: string;
  readonly why: string;
}

// Empty since the fake desktop has live screens (packages/testing's fake-gateway.ts).
export const EXPECTED_ERRORS: readonly ExpectedError[] = [];

export function isExpectedError(provider: string, op: string, code: string): boolean {
  return EXPECTED_ERRORS.some((e) => e.provider === provider && e.op === op && e.code === code);
}
