// The lease engine's input schemas (lease-engine.ts), built once:
// constructing a zod schema costs far more than parsing with it. The two
// that check a lease against its own engine stay in the engine.
import { z } from "zod";
import { computerIdSchema } from "./computer-schemas.js";
import type { StateStore } from "./state-store.js";

export const MAX_TTL_MS = 30 * 24 * 60 * 60 * 1000;
export const idSchema = z.string().min(1).max(256);
export const holderSchema = z.string().min(1).max(256);
export const ttlSchema = z.number().positive().max(MAX_TTL_MS);
export const purposeSchema = z.enum(["update", "recovery", "idle-suspension", "stop", "mode-change"]);
export const RESERVATION_ID = /^reservation:([^:]+):([1-9][0-9]*)$/;

export const acquireSchema = z.object({ key: z.string().min(1).max(512), holder: holderSchema, ttlMs: ttlSchema });
export const acquireExecutionSchema = z.object({
  computerId: computerIdSchema,
  botId: idSchema,
  holder: holderSchema,
  ttlMs: ttlSchema,
});
export const takeoverSchema = z.object({
  computerId: computerIdSchema,
  botId: idSchema,
  holder: holderSchema,
  ttlMs: ttlSchema,
  run: z.enum(["idle", "active", "waiting_takeover"]).optional(),
});
export const acquireCheckpointSchema = z.object({
  computerId: computerIdSchema,
  holder: holderSchema,
  ttlMs: ttlSchema,
});
export const reserveSchema = z.object({ computerId: computerIdSchema, holder: holderSchema, purpose: purposeSchema });
export const releaseInterruptedSchema = z.object({
  id: z.string().regex(RESERVATION_ID, "expected a reservation id"),
  workersStopped: z.literal(true),
});

export const assertOptionsSchema = z.object({ desktop: idSchema.optional() });

export const optionsSchema = z.object({
  monotonicNow: z.custom<() => number>((v) => typeof v === "function", "expected a function").optional(),
  interruptAfterMs: ttlSchema.optional(),
  maxAttempts: z.number().int().min(1).max(10_000).optional(),
});

export const storeSchema = z.custom<StateStore>(
  (v) =>
    typeof v === "object" &&
    v !== null &&
    ["read", "commit", "now"].every((m) => typeof (v as Record<string, unknown>)[m] === "function"),
  "expected a StateStore with read, commit and now",
);
