/**
 * What a lease guards (docs/architecture.md §6). `custom` is any key the app names; the
 * others are the runtime's kinds, whose keys the engine derives from the
 * computer and bot so their exclusion rules cannot be sidestepped.
 * - `execution`: one driver per bot; different bots run concurrently.
 * - `user-control`: a person controls one bot's screen (takeover); while
 *   held, that bot's desktop actions fail FENCED_OUT.
 * - `checkpoint`: per computer, held from export to `commitRevision`.
 * - `reservation`: computer-wide maintenance that excludes new execution
 *   leases, takeovers and other reservations while it runs.
 */
export type LeaseKind = "custom" | "execution" | "user-control" | "checkpoint" | "reservation";
