/**
 * What a `StateStore.commit` requires of one key before it writes anything:
 * the version the caller read, or `null` for "must not exist". An
 * expectation without a write is a guard: the commit fails if that key
 * changed, which is how the engine makes "no reservation is running" part of
 * an execution lease's grant.
 */
export interface CommitExpectation {
  readonly key: string;
  readonly version: number | null;
}
