import { AgentComputerError } from "../errors/agent-computer-error.js";

/**
 * An opaque handle a provider returns for a machine: `<kind>:<id>`. It is an
 * acceleration path, never durable data: a missing machine or a kind change
 * means provision a replacement and restore the latest checkpoint.
 */
export type ProviderRef = `${string}:${string}`;

const KIND = /^[a-z][a-z0-9-]*$/;

/** Builds `<kind>:<id>`. */
export function makeProviderRef(kind: string, id: string): ProviderRef {
  if (!KIND.test(kind)) throw new AgentComputerError("INVALID_ARGUMENT", `Invalid provider kind "${kind}".`);
  if (id.length === 0) throw new AgentComputerError("INVALID_ARGUMENT", "A provider ref needs a non-empty id.");
  return `${kind}:${id}`;
}

/**
 * Returns the id part of `ref` when it belongs to `kind`. A ref of another
 * kind is refused with INVALID_ARGUMENT; its id is never parsed.
 */
export function providerRefId(ref: unknown, kind: string): string {
  if (typeof ref !== "string") {
    throw new AgentComputerError("INVALID_ARGUMENT", `Invalid ProviderRef: expected a string "<kind>:<id>".`);
  }
  const colon = ref.indexOf(":");
  const refKind = colon < 0 ? "" : ref.slice(0, colon);
  if (refKind !== kind) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `This ${kind} provider cannot use a ref of kind "${refKind || "(none)"}"; pass refs back only to the provider kind that made them.`,
    );
  }
  const id = ref.slice(colon + 1);
  if (id.length === 0) throw new AgentComputerError("INVALID_ARGUMENT", "Invalid ProviderRef: the id is empty.");
  return id;
}
