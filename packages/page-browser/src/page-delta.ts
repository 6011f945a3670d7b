import type { PageElement, PageSnapshotDelta } from "@agent-computer/core";
import { hashOf } from "./shown-hash.js";

/** A delta of `elements` and `text` against the latest snapshot, or undefined when a full snapshot is smaller. */
export function pageDelta(
  since: { snapshotNumber: number; lineHashes: readonly number[]; entries: readonly { ref: string; shown?: number }[] },
  elements: readonly (PageElement & { shown: number })[],
  text: string,
): { delta: PageSnapshotDelta; elements: PageElement[]; text: string } | undefined {
  const before = new Map(since.entries.map((e) => [e.ref, e.shown]));
  const now = new Set(elements.map((e) => e.ref));
  const changed = elements.filter((e) => before.get(e.ref) !== e.shown);
  const removed = since.entries.filter((e) => !now.has(e.ref)).map((e) => e.ref);
  const seen = new Set(since.lineHashes);
  const lines = text.split("\n");
  const newLines = lines.filter((line) => !seen.has(hashOf(line)));
  // A delta that says about as much as the page itself is not worth its bookkeeping.
  if (changed.length + removed.length > elements.length * 0.6 || newLines.length > lines.length * 0.6) return undefined;
  return {
    delta: {
      since: `s${since.snapshotNumber}`,
      removed,
      unchanged: elements.length - changed.length,
      textUnchanged: newLines.length === 0,
    },
    elements: changed.map(({ shown: _shown, ...e }) => e),
    text: newLines.join("\n"),
  };
}
