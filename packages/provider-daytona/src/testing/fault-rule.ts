/** A fault the emulator injects: the next `times` calls that match are answered with `status`. */
export interface FaultRule {
  /** HTTP method to match ("WS" for a websocket upgrade, such as a command's log stream); any when unset. */
  method?: string;
  /** Matched against the request path (`/api/sandbox/<id>/start`, `/toolbox/<id>/process/session`, ...). */
  path: RegExp;
  status: number;
  message?: string;
  /** Answer with the fault only after the call took effect (a lost answer), not instead of it. */
  after?: boolean;
  /** How many calls it answers (default 1). */
  times?: number;
}
