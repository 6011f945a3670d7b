import { AgentComputerError } from "@agent-computer/core";
import type { CommitExpectation } from "./commit-expectation.js";
import type { VersionedRecord } from "./versioned-record.js";

const MAX_KEY_LENGTH = 1024;

/**
 * The shape rules of `StateStore.commit`, for stores to call before they
 * touch storage: keys unique and non-empty, every written key expected, and
 * each written version exactly one above the expected one. A store that
 * enforces this can never be made to write blindly or move a version
 * backwards, whatever its caller does. Throws INVALID_ARGUMENT.
 */
export function checkCommit(expect: readonly CommitExpectation[], write: readonly VersionedRecord[]): void {
  if (!Array.isArray(expect) || !Array.isArray(write))
    throw invalid("(root)", "expected two arrays: expectations and writes");
  const expected = new Map<string, number | null>();
  expect.forEach((e, i) => {
    checkKey(e?.key, `expect.${i}.key`);
    if (expected.has(e.key)) throw invalid(`expect.${i}.key`, `"${e.key}" is expected twice`);
    if (e.version !== null && !isVersion(e.version))
      throw invalid(`expect.${i}.version`, "expected null or an integer >= 1");
    expected.set(e.key, e.version);
  });
  const written = new Set<string>();
  write.forEach((r, i) => {
    checkKey(r?.key, `write.${i}.key`);
    if (written.has(r.key)) throw invalid(`write.${i}.key`, `"${r.key}" is written twice`);
    written.add(r.key);
    if (!expected.has(r.key))
      throw invalid(`write.${i}.key`, `"${r.key}" has no expectation; a store never writes blindly`);
    const want = (expected.get(r.key) ?? 0) + 1;
    if (r.version !== want) throw invalid(`write.${i}.version`, `expected ${want} (the expected version plus one)`);
    if (typeof r.value !== "object" || r.value === null || Array.isArray(r.value))
      throw invalid(`write.${i}.value`, "expected a JSON object");
  });
}

function checkKey(key: unknown, path: string): asserts key is string {
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_KEY_LENGTH)
    throw invalid(path, `expected a string of 1 to ${MAX_KEY_LENGTH} characters`);
}

function isVersion(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1;
}

function invalid(path: string, message: string): AgentComputerError {
  return new AgentComputerError("INVALID_ARGUMENT", `Invalid StateStore commit: at "${path}": ${message}`);
}
