/**
 * The computer id a bot of a workspace works on (docs/architecture.md §2).
 * Only a name: what the computer is (team or private, whose) lives in its
 * record. A Private computer's id joins the two ids with one `-` and
 * doubles every `-` in them, so no two (workspace, bot) pairs share a
 * computer: joined plainly, `a-b` with bot `c` and `a` with bot `b-c` were
 * both `private-a-b-c`, one computer and one home for two tenants. Ids
 * without a `-` read as before. Unambiguous because a bot id never starts
 * with `-`: the first dash not of a pair is the join.
 */
export function computerIdFor(workspaceId: string, botId: string, mode: "team" | "private"): string {
  const escaped = (id: string) => id.replaceAll("-", "--");
  return mode === "private" ? `private-${escaped(workspaceId)}-${escaped(botId)}` : `team-${workspaceId}`;
}
