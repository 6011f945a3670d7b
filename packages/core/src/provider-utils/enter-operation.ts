import { checkOpContext, type OpContext, throwIfDone } from "../contract/op-context.js";

/**
 * The first step of every provider method: validates the caller's context
 * and throws ABORTED or TIMEOUT when it is already done, naming `what` (a
 * "command", a "workspace export") in the message.
 */
export function enterOperation(ctx: OpContext | undefined, what: string): OpContext {
  const context = checkOpContext(ctx);
  throwIfDone(context, what);
  return context;
}
