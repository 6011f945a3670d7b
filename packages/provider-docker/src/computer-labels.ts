/**
 * Labels every computer container carries, so `list` finds only this
 * project's machines and a person reading `docker ps` sees which computer
 * and home a container serves.
 */
export const COMPUTER_LABELS = {
  managed: "org.agent-computer.managed",
  computerId: "org.agent-computer.computer-id",
  homeKey: "org.agent-computer.home-key",
  screenLimit: "org.agent-computer.screen-limit",
  workspacePath: "org.agent-computer.workspace-path",
} as const;
