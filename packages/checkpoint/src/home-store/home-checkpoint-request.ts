import type { OpContext } from "@agent-computer/core";
import type { HomeSource } from "./home-source.js";

/** Input of `AgentHomeStore.checkpoint`. */
export interface HomeCheckpointRequest {
  /** The home: letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
  readonly homeKey: string;
  readonly source: HomeSource;
  /**
   * Called at the commit point, after the new copy is complete and before it
   * replaces the previous one, with the revision it will have and, from a
   * store that may hold several uploads of one revision (the S3 store), the
   * name of this one (`attempt`), for the record to name the winner. The
   * runtime passes a hook that calls the lease engine's fenced
   * `commitRevision`; if it throws (FENCED_OUT, CONFLICT, ...) nothing
   * advances and the previous copy stays. Without it revisions advance
   * locally.
   */
  readonly commit?: (nextRevision: number, attempt?: string) => Promise<void>;
  /**
   * The revision the caller's record holds as committed (the runtime passes
   * its computer record's). A store that keeps its own copy (the local
   * store) uses it to settle a checkpoint that a crash cut off between the
   * commit hook and the swap: finished when the record has it, dropped when
   * not. Stores that read the record themselves (the S3 store) ignore it.
   */
  readonly committedRevision?: number;
  readonly ctx?: OpContext;
}
