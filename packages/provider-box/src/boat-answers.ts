import { z } from "zod";

// The answers of Boat's API that the client reads, from boat-v1.yaml
// (OpenAgentsInc/openagents, crates/boat/schema/), each beside the
// component it follows. Tolerant on purpose (README, "What the client
// tolerates"): unknown fields pass, the legacy Box base's keys (`box`,
// `boxes`) are read where Boat's (`sandbox`, `sandboxes`) are missing, and
// where the definition was found silent or the base may differ the client
// accepts both shapes. The emulator holds its answers to the definition
// itself (src/testing/boat-definition.ts), not to these.

/** SuccessBase: every success body. */
export const okEnvelope = z.looseObject({ ok: z.literal(true), type: z.string() });

/** Sandbox: what the client reads of one. */
const sandbox = z.looseObject({
  id: z.string().min(1),
  state: z.string().min(1),
  name: z.string().nullish(),
  createdAt: z.string().nullish(),
  /** When auto-stop archives it; null: never. */
  archiveAfter: z.string().nullish(),
  /** Why it stopped, failed or was cancelled. */
  error: z.string().nullish(),
});
export type BoatSandbox = z.infer<typeof sandbox>;

/** SandboxInfoResponse / CreateSandboxResponse: the sandbox under `sandbox` (legacy: `box`). */
export const sandboxAnswer = okEnvelope
  .extend({ sandbox: sandbox.optional(), box: sandbox.optional() })
  .refine((a) => a.sandbox ?? a.box, "no sandbox in the answer")
  .transform((a) => (a.sandbox ?? a.box) as BoatSandbox);

/** PageInfo: the next page's cursor, null on the last. */
const pageInfo = z.looseObject({ nextCursor: z.string().nullish(), hasMore: z.boolean().optional() });

/** SandboxListResponse: `sandboxes` and `pageInfo` (legacy: `boxes`, a top-level `nextCursor`). */
export const listAnswer = okEnvelope
  .extend({
    sandboxes: z.array(sandbox).optional(),
    boxes: z.array(sandbox).optional(),
    pageInfo: pageInfo.nullish(),
    nextCursor: z.string().nullish(),
  })
  .refine((a) => a.sandboxes ?? a.boxes, "no sandboxes in the answer")
  .transform((a) => ({
    sandboxes: (a.sandboxes ?? a.boxes) as BoatSandbox[],
    nextCursor: (a.pageInfo?.hasMore === false ? undefined : (a.pageInfo?.nextCursor ?? a.nextCursor)) ?? undefined,
  }));

/** SandboxActionResponse (stop, resume): an id and a status; the sandbox is optional and may be null. */
export const actionAnswer = okEnvelope.extend({ id: z.string().optional(), status: z.string().optional() });

/** DeletionOperation: polled until `completed`; `blocked` does not finish by itself. */
const deletionOperation = z.looseObject({
  id: z.string().min(1),
  status: z.string().min(1),
  stage: z.string().nullish(),
});
/** DeletionOperationResponse; the legacy base may answer without an operation. */
export const deletionAnswer = okEnvelope.extend({ operation: deletionOperation.optional() });

/** CommandResponse: a synchronous command's whole (or cut) output. */
export const commandAnswer = okEnvelope.extend({
  exitCode: z.number().int().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean().default(false),
  stderrTruncated: z.boolean().default(false),
  timedOut: z.boolean().default(false),
  success: z.boolean().optional(),
  signal: z.string().nullish(),
  oomKilled: z.boolean().optional(),
});
export type BoatCommandResult = z.infer<typeof commandAnswer>;

/** A process id: an integer (CommandStartedResponse.processId); digits in a string are read as one. */
const processId = z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(/^[1-9]\d*$/)
    .transform(Number),
]);

/** CommandStartedResponse: a detached command's `processId`. */
export const startedAnswer = okEnvelope.extend({ processId });

/** CommandStatusResponse: `running` decides; `status` is running, exited or lost. */
export const statusAnswer = okEnvelope
  .extend({
    processId,
    status: z.string(),
    running: z.boolean().optional(),
    exitCode: z.number().int().nullish(),
    stdout: z.string().default(""),
    stderr: z.string().default(""),
  })
  .transform((a) => ({ ...a, running: a.running ?? a.status === "running" }));
export type BoatCommandStatus = z.infer<typeof statusAnswer>;

/** NamedSnapshot: `status` saving, ready or failed (read from `state` where an older answer had it). */
const namedSnapshot = z
  .looseObject({
    name: z.string().min(1),
    status: z.string().optional(),
    state: z.string().optional(),
    error: z.string().nullish(),
  })
  .refine((s) => s.status ?? s.state, "a named snapshot without a status")
  .transform((s) => ({ ...s, status: (s.status ?? s.state) as string }));
export type BoatNamedSnapshot = z.infer<typeof namedSnapshot>;

/** NamedSnapshotInfoResponse and NamedSnapshotSavingResponse: the snapshot under `snapshot`. */
export const namedSnapshotAnswer = okEnvelope.extend({ snapshot: namedSnapshot }).transform((a) => a.snapshot);

/** FileReadResponse. */
export const fileAnswer = okEnvelope.extend({ content: z.string(), encoding: z.string().default("utf8") });

/** HostPortResponse: the route, with `_token` in the query unless public. */
export const hostAnswer = okEnvelope.extend({ url: z.string().url() });

/** ErrorEnvelope: the code and message at the top and under `error`. */
export const errorEnvelope = z.looseObject({
  ok: z.literal(false).optional(),
  status: z.number().optional(),
  code: z.string().optional(),
  message: z.string().optional(),
  error: z.looseObject({ code: z.string().optional(), message: z.string().optional() }).optional(),
  requestId: z.string().optional(),
});
