import { type ComputerSpec, computerSpecSchema, type ResolvedComputerSpec } from "../contract/computer-spec.js";
import { type OpContext, signalOf } from "../contract/op-context.js";
import { parseInput } from "../validation/parse-input.js";
import { enterOperation } from "./enter-operation.js";

/** What a provider fills in where a spec is silent: the fields of the same names in its options. */
export interface ProvisionDefaults {
  /** The image for specs that name none; without it, the provider's `defaultImage()`. */
  readonly image?: string;
  /** Active desktops allowed at once when the spec does not say (0 = no cap). */
  readonly screenLimit: number;
}

/** A checked `provision` call. */
export interface ProvisionRequest {
  /** The spec after its schema, its `screenLimit` the provider's default where the caller gave none. */
  readonly spec: ResolvedComputerSpec;
  readonly image: string;
  readonly context: OpContext;
  /** Fires on the caller's abort or the deadline. */
  readonly signal: AbortSignal;
}

/**
 * The preamble of every `provision`: the spec through its schema, then the
 * provider's own check of it (`check`, e.g. label rules), then the context,
 * then the defaults.
 */
export async function provisionRequestOf(
  spec: ComputerSpec,
  ctx: OpContext | undefined,
  defaults: { readonly image: Promise<string>; readonly screenLimit: number },
  check?: (spec: ResolvedComputerSpec) => void,
): Promise<ProvisionRequest> {
  const resolved = parseInput(computerSpecSchema, spec, "ComputerSpec");
  check?.(resolved);
  const context = enterOperation(ctx, "provision");
  const signal = signalOf(context, "provision");
  const image = resolved.image ?? (await defaults.image);
  const screenLimit = spec.screenLimit === undefined ? defaults.screenLimit : resolved.screenLimit;
  return { spec: { ...resolved, screenLimit }, image, context, signal };
}
