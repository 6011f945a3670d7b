import type { OpContext } from "@agent-computer/core";
import type { HomeTarget } from "./home-target.js";

/** Input of `AgentHomeStore.restore`. */
export interface HomeRestoreRequest {
  readonly homeKey: string;
  readonly target: HomeTarget;
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
