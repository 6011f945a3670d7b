import type { ComputerScope } from "@agent-computer/leases";

/**
 * A bot's own folder as its tools see it (runtime's BotRun.workdir): the
 * whole home (".") on a Private computer, `bots/<bot>` on a Team one. The
 * Files page opens there and, by default, uploads go there.
 */
export function botFolderOf(botId: string, scope: ComputerScope): readonly string[] {
  return [scope.kind === "private" ? "." : `bots/${botId}`];
}
