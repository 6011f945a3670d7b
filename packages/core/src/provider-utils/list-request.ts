import { type ListFilter, listFilterSchema } from "../contract/list-filter.js";
import { type OpContext, signalOf } from "../contract/op-context.js";
import { parseInput } from "../validation/parse-input.js";
import { enterOperation } from "./enter-operation.js";

/** A checked `list` call. */
export interface ListRequest {
  readonly labels: Record<string, string>;
  readonly context: OpContext;
  readonly signal: AbortSignal;
}

/** The preamble of every `list`: the filter through its schema, then the context. */
export function listRequestOf(filter: ListFilter, ctx: OpContext | undefined): ListRequest {
  const { labels } = parseInput(listFilterSchema, filter, "ListFilter");
  const context = enterOperation(ctx, "list");
  return { labels, context, signal: signalOf(context, "list") };
}
