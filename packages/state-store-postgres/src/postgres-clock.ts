/**
 * How far a time this store reports (`now()`, and so a lease's grant time)
 * may stand from the order its commits take: PostgreSQL's clock is read in
 * a round trip of its own before each commit, so a grant read at T can
 * commit after one read at T + a few ms (5 ms was seen under load; a
 * server restart mid-run showed 2 ms). A fencing check over this store's
 * history (`checkFencingHistory` in @agent-computer/testing) allows it on
 * its time-based rules only; the rules that use the resource's own order
 * allow nothing.
 */
export const POSTGRES_CLOCK_TOLERANCE_MS = 50;
