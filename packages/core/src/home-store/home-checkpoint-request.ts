import type { OpContext } from "../contract/op-context.js";
import type { HomeSource } from "./home-source.js";

/** Input of `AgentHomeStore.checkpoint`. */
export interface HomeCheckpointRequest {
  /** The home: letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
  readonly homeKey: string;
  readonly source: HomeSource;
  /**
   * Called at the commit point, after the new copy is complete and before it
   * replaces the previous one, with the revision it will have. The runtime
   * passes a hook that calls the lease engine's fenced `commitRevision`; if
   * it throws (FENCED_OUT, CONFLICT, ...) nothing advances and the previous
   * copy stays. Without it revisions advance locally.
   */
  readonly commit?: (nextRevision: number) => Promise<void>;
  readonly ctx?: OpContext;
}
