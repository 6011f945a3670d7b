/**
 * What a capability allows: which bot's desktop, on which computer, in
 * which mode ("terminal": a shell on that desktop, under control).
 * Secret-free: every event and log line carries it.
 */
export interface ScreenPolicy {
  readonly mode: "view" | "control" | "terminal";
  readonly computerId: string;
  readonly botId: string;
}
