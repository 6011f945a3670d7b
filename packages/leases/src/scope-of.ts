import type { ComputerRecord } from "./computer-record.js";
import type { ComputerScope } from "./computer-scope.js";

const TEAM: ComputerScope = { kind: "team" };

/**
 * The record's scope. A record written before scopes were stored has none
 * and reads as team, the runtime's default: for a Private computer that
 * only means the team screen cap (its one bot never reaches it) and no
 * bot-id label on its next machine. The runtime writes the real scope into
 * such a record the next time one of its runs brings the computer up.
 */
export function scopeOf(record: Pick<ComputerRecord, "scope">): ComputerScope {
  return record.scope ?? TEAM;
}
