import type { FencingEvent } from "./fencing-event.js";
import type { FencingViolation } from "./fencing-violation.js";

/**
 * Proves a fencing history safe or names what broke, per key:
 * - a token belongs to one holder, and later grants carry larger tokens;
 * - every accepted action was made under a token that was granted to its holder;
 * - no action was accepted after a newer token's grant in the resource's own
 *   order (a fenced-out holder acted): an action ordered above the order a
 *   grant saw once it had committed came after that grant;
 * - no action was accepted once its lease had expired;
 * - in the resource's own order, accepted actions never go back to an older
 *   token (two holders' actions overlapped).
 * Returns no violations for a safe history.
 *
 * The fenced-out rule needs no clock: times read outside a transaction do not
 * order two commits (PostgreSQL reads its clock in a round trip before each
 * commit, so an action read at T can commit before a grant read at T - 1;
 * docs/architecture.md §6). `clockToleranceMs` (default 0) loosens only the
 * time-based rules (token order, expired) for such stores. The overlap and
 * fenced-out rules use the resource's own order and allow nothing.
 */
export function checkFencingHistory(
  events: readonly FencingEvent[],
  options: { clockToleranceMs?: number } = {},
): FencingViolation[] {
  const tolerance = options.clockToleranceMs ?? 0;
  const violations: FencingViolation[] = [];
  const byKey = new Map<string, FencingEvent[]>();
  for (const e of events) {
    const list = byKey.get(e.key) ?? [];
    list.push(e);
    byKey.set(e.key, list);
  }
  for (const [key, list] of byKey) violations.push(...checkKey(key, list, tolerance));
  return violations;
}

function checkKey(key: string, events: readonly FencingEvent[], tolerance: number): FencingViolation[] {
  const out: FencingViolation[] = [];
  const holderOf = new Map<number, string>();
  const grantedAt = new Map<number, number>();
  const seenAt = new Map<number, number>();
  const expiry = new Map<number, number>();
  for (const e of events) {
    if (e.type === "act") continue;
    if (e.type === "grant") {
      const holder = holderOf.get(e.token);
      if (holder !== undefined && holder !== e.holder)
        out.push({ rule: "token-reused", key, message: `token ${e.token} granted to ${holder} and to ${e.holder}` });
      holderOf.set(e.token, e.holder);
      grantedAt.set(e.token, Math.min(grantedAt.get(e.token) ?? Number.POSITIVE_INFINITY, e.at));
      seenAt.set(e.token, Math.min(seenAt.get(e.token) ?? Number.POSITIVE_INFINITY, e.seenOrder));
    }
    expiry.set(e.token, Math.max(expiry.get(e.token) ?? Number.NEGATIVE_INFINITY, e.expiresAt));
  }
  const grants = [...grantedAt].sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < grants.length; i++) {
    const [prevToken, prevAt] = grants[i - 1] as [number, number];
    const [token, at] = grants[i] as [number, number];
    if (at + tolerance < prevAt)
      out.push({
        rule: "token-order",
        key,
        message: `token ${token} granted at ${at}, before token ${prevToken} at ${prevAt}`,
      });
  }

  const accepted = events.filter((e): e is Extract<FencingEvent, { type: "act" }> => e.type === "act" && e.accepted);
  for (const act of accepted) {
    const where = `action by ${act.holder} with token ${act.token} at ${act.at}`;
    if (holderOf.get(act.token) !== act.holder) {
      out.push({ rule: "unknown-token", key, message: `${where}: that token was never granted to it` });
      continue;
    }
    // By order, not time: an action whose order is above what a newer grant
    // saw after committing was committed after that grant.
    const order = act.order;
    const newer =
      order === undefined ? undefined : [...seenAt].find(([token, seen]) => token > act.token && order > seen);
    if (newer) {
      out.push({
        rule: "fenced-out-accepted",
        key,
        message: `${where} was accepted as #${order} although token ${newer[0]} had been granted by #${newer[1]}`,
      });
    }
    const expiresAt = expiry.get(act.token) ?? Number.NEGATIVE_INFINITY;
    if (act.at >= expiresAt + tolerance)
      out.push({ rule: "expired-accepted", key, message: `${where} was accepted although it expired at ${expiresAt}` });
  }

  const ordered = accepted.filter((a) => a.order !== undefined).sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
  for (let i = 1; i < ordered.length; i++) {
    const prev = ordered[i - 1] as (typeof ordered)[number];
    const cur = ordered[i] as (typeof ordered)[number];
    if (cur.token < prev.token) {
      out.push({
        rule: "overlapping-holders",
        key,
        message: `action #${cur.order} (token ${cur.token}, ${cur.holder}) came after #${prev.order} (token ${prev.token}, ${prev.holder})`,
      });
    }
  }
  return out;
}
