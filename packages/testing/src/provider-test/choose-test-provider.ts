import { reportMissingProvider } from "./report-missing-provider.js";
import type { TestProvider } from "./test-provider.js";
import type { ProviderCheck, TestProviderCandidate } from "./test-provider-candidate.js";

/**
 * Chooses the provider a suite runs on from what this machine has: the
 * first candidate (in the order given) whose check finds what it needs.
 * When none can run, the result carries `missing` (the first candidate's
 * findings, every candidate's reason) and, given the `suite`'s name, the
 * suite is reported with `reportMissingProvider`: failing under CI, skipped
 * elsewhere. Register the suite's own tests only when nothing is missing.
 */
export async function chooseTestProvider<Found extends ProviderCheck, Options>(
  candidates: TestProviderCandidate<Found, Options> | readonly TestProviderCandidate<Found, Options>[],
  suite?: string,
): Promise<TestProvider<Found, Options>> {
  const list: readonly TestProviderCandidate<Found, Options>[] = Array.isArray(candidates)
    ? candidates
    : [candidates as TestProviderCandidate<Found, Options>];
  if (list.length === 0) throw new Error("chooseTestProvider needs at least one candidate");
  const checked: { candidate: TestProviderCandidate<Found, Options>; found: Found }[] = [];
  for (const candidate of list) {
    const found = await candidate.check();
    if (!found.missing) return chosen(candidate, found);
    checked.push({ candidate, found });
  }
  const [first] = checked as [(typeof checked)[number]];
  const missing =
    checked.length === 1
      ? first.found.missing
      : checked.map((c) => `${c.candidate.kind}: ${c.found.missing}`).join("; ");
  const none = chosen(first.candidate, { ...first.found, missing });
  if (suite !== undefined) reportMissingProvider(suite, none);
  return none;
}

function chosen<Found extends ProviderCheck, Options>(
  candidate: TestProviderCandidate<Found, Options>,
  found: Found,
): TestProvider<Found, Options> {
  const { missing, ...findings } = found;
  const provider = (options?: object) => {
    if (missing) throw new Error(`No ${candidate.kind} provider on this machine: ${missing}`);
    return candidate.create({ ...findings, ...options } as Options);
  };
  return { ...found, kind: candidate.kind, provider } as TestProvider<Found, Options>;
}
