/**
 * One real lifecycle step of an operation, as a UI shows it: no estimated
 * percentages, only what was actually done and how it ended.
 */
export interface OperationStage {
  readonly name:
    | "checkpointing" // update, mode change: the (source computer's) live home saved first
    | "provisioning" // a new machine made with the configured provider and image
    | "restoring" // the last saved workspace put into it
    | "switching" // the computer record now points at the new machine
    | "removing-old" // the previous machine destroyed
    | "copying" // mode change: the bot's folder and browser profile copied into the target computer
    | "checkpointing-target" // mode change: the target computer's home saved with them
    | "removing-source"; // mode change: the bot's files gone from the Team computer, or its Private computer deleted
  readonly status: "running" | "done" | "skipped" | "failed";
  /** By the state store's clock. */
  readonly startedAt: number;
  readonly endedAt?: number;
  /** Secret-free facts: revision, refs' kinds, why it was skipped. */
  readonly detail?: Readonly<Record<string, string | number | boolean>>;
}
