/**
 * A fault an emulator injects: the next `times` requests that match are
 * answered with `status` instead of (or, with `after`, after) the real work.
 */
export interface FaultRule {
  /** HTTP method to match ("WS" for a websocket upgrade); any when unset. */
  method?: string;
  /** Matched against the request path. */
  path: RegExp;
  status: number;
  /** The error's code, where the service's errors carry one. */
  code?: string;
  /** The error's message (default "injected fault"). */
  message?: string;
  /** Make the call first, then answer the fault: an answer lost after the work was done. */
  after?: boolean;
  /** How many requests it answers (default 1; `Infinity` until cleared). */
  times?: number;
  /** Let this many matching requests through before the fault starts (default 0). */
  skip?: number;
  /** Seconds sent as `Retry-After` (with a 429 or 503). */
  retryAfter?: number;
}

/** The faults an emulator has been told to inject, taken in the order they were given. */
export class FaultRules<Rule extends FaultRule = FaultRule> {
  private readonly rules: Rule[] = [];

  inject(rule: Rule): void {
    this.rules.push({ ...rule, times: rule.times ?? 1 });
  }

  /** The fault this request gets, counted down; none while a rule still lets requests through (`skip`). */
  take(method: string, path: string): Rule | undefined {
    const rule = this.rules.find(
      (r) => (r.times ?? 1) > 0 && (r.method === undefined || r.method === method) && r.path.test(path),
    );
    if (!rule) return undefined;
    if ((rule.skip ?? 0) > 0) {
      rule.skip = (rule.skip ?? 0) - 1;
      return undefined;
    }
    rule.times = (rule.times ?? 1) - 1;
    if (rule.times <= 0) this.rules.splice(this.rules.indexOf(rule), 1);
    return rule;
  }

  /** Drops every fault not yet answered. */
  clear(): void {
    this.rules.length = 0;
  }

  /** How many answers the faults still hold (Infinity for one given until cleared). */
  get pending(): number {
    return this.rules.reduce((sum, r) => sum + (r.times ?? 1), 0);
  }
}
