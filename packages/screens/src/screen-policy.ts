/**
 * What a screen capability allows: which bot's desktop, on which computer,
 * in which mode. Secret-free: every event and log line carries it.
 */
export interface ScreenPolicy {
  readonly mode: "view" | "control";
  readonly computerId: string;
  readonly botId: string;
}
