/**
 * One lifecycle step of a computer, for an app's UI and logs. Each step is
 * reported once, when it finished, with how long it took.
 */
export interface ComputerEvent {
  readonly type:
    | "provisioning" // a new machine was made
    | "restoring" // the latest checkpoint went into it
    | "ready" // the computer answers (new, replaced or reconnected)
    | "replaced" // the previous machine was gone or of another kind
    | "checkpointing" // the home was saved under a new revision
    | "checkpoint-deferred" // a run ended while other bots still work; the last one saves
    | "suspending" // the computer was stopped (idle, active limit, or asked)
    | "suspension-deferred" // idle, but background work holds it (detail.jobs); the idle time counts again
    | "takeover-requested" // a bot asks a person to take over its screen
    | "takeover-started" // a person controls a bot's screen: its desktop actions are fenced out
    | "takeover-ended" // the person released it
    | "egress-denied"; // its egress fence refused a request (detail: policy, host, port, reason, address)
  readonly computerId: string;
  /** Milliseconds since the epoch, by the runtime's clock. */
  readonly at: number;
  readonly durationMs: number;
  /** Secret-free facts: revision, reason, ref kind, bot id. */
  readonly detail: Readonly<Record<string, string | number | boolean>>;
}
