import type { OpContext } from "../contract/op-context.js";
import type { HomeTarget } from "./home-target.js";

/** Input of `AgentHomeStore.restore`. */
export interface HomeRestoreRequest {
  readonly homeKey: string;
  readonly target: HomeTarget;
  readonly ctx?: OpContext;
}
