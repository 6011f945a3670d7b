import { type ListFilter, listFilterSchema } from "../contract/list-filter.js";
import { type OpContext, signalOf } from "../contract/op-context.js";
import { parseInput } from "../validation/parse-input.js";
import { enterOperation } from "./enter-operation.js";

/** A checked `list` call. */
export interface ListRequest {
  readonly labels: Record<string, string>;
  /** Only machines running now (`ListFilter.running`). */
  readonly running: boolean;
  readonly context: OpContext;
  readonly signal: AbortSignal;
}

/** The preamble of every `list`: the filter through its schema, then the context. */
export function listRequestOf(filter: ListFilter, ctx: OpContext | undefined): ListRequest {
  const { labels, running } = parseInput(listFilterSchema, filter, "ListFilter");
  const context = enterOperation(ctx, "list");
  return { labels, running: running ?? false, context, signal: signalOf(context, "list") };
}
