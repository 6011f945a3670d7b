import { computerIdSchema, homeKeySchema } from "@agent-computer/core";
import { z } from "zod";
import { computerOwnerSchema } from "./computer-owner.js";
import { computerRunSchema } from "./computer-run.js";
import { computerScopeSchema } from "./computer-scope.js";

const PROVIDER_KIND = /^[a-z][a-z0-9-]*$/;

// The computer id rule is core's; the engine's schemas import it from here.
export { computerIdSchema };

const mutableFields = {
  providerKind: z.string().regex(PROVIDER_KIND, "a provider kind of lower-case letters, digits and -"),
  providerRef: z.string().min(3).max(2048).nullable(),
  homeKey: homeKeySchema,
  storageId: z.string().min(1).max(256),
  scope: computerScopeSchema.optional(),
  owner: computerOwnerSchema.optional(),
  wrappedDataKey: z.string().min(1).max(16_384).optional(),
  runs: z.array(computerRunSchema).max(10_000),
};

/** A ref of another kind would be passed to the wrong provider; refuse it at the door. */
export function refMatchesKind(value: { providerKind?: string; providerRef?: string | null }): boolean {
  return value.providerRef == null || value.providerRef.startsWith(`${value.providerKind}:`);
}
const refMessage = { message: "expected a ref of the form <providerKind>:<id>", path: ["providerRef"] };

export const createComputerSchema = z
  .object({
    computerId: computerIdSchema,
    ...mutableFields,
    providerRef: mutableFields.providerRef.default(null),
    revision: z.number().int().nonnegative().default(0),
    runs: mutableFields.runs.default([]),
  })
  .refine(refMatchesKind, refMessage);

export const updateComputerSchema = z.object({
  computerId: computerIdSchema,
  expectedVersion: z.number().int().positive(),
  changes: z
    .object({
      ...mutableFields,
      // null removes the wrapped key (a re-keyed or forgotten home).
      wrappedDataKey: mutableFields.wrappedDataKey.unwrap().nullable().optional(),
    })
    .partial()
    .strict(),
});

export const deleteComputerSchema = z.object({
  computerId: computerIdSchema,
  expectedVersion: z.number().int().positive().optional(),
});
