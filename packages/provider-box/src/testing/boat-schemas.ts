// The shapes of the Boat sandbox API (formerly Box), written from its published
// OpenAPI definition, boat-v1.yaml in OpenAgentsInc/openagents
// (crates/boat/schema): never from the client in this package, so an emulator
// held to them checks the client against the service and not against itself.
// Answers are loose about extra properties (the service adds fields over time)
// and strict about required fields, types and enums; requests are strict.
import { posix } from "node:path";
import { z } from "zod";

/** Public sandbox ids (boat-v1.yaml parameters.SandboxId): `bx_` and 8 characters of an alphabet without 0, 1, i, l, o. */
export const BOAT_SANDBOX_ID_PATTERN = /^bx_[23456789abcdefghjkmnpqrstuvwxyz]{8}$/;

/** Where relative paths resolve inside a sandbox (FileWriteRequest.path, readFile's `path`). */
export const BOAT_WORK_DIRECTORY = "/home/user";

/** The roots a file path must resolve under (FileWriteRequest.path). */
export const BOAT_FILE_ROOTS = [BOAT_WORK_DIRECTORY, "/tmp"] as const;

/** Deletion operation ids (parameters.OperationId, DeletionOperation.id). */
export const BOAT_DELETION_OPERATION_ID_PATTERN = /^bdop_[a-f0-9]{32}$/;

/** Named snapshot names (NamedSnapshot.name, NamedSnapshotSaveRequest.name). */
export const BOAT_SNAPSHOT_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Names the service keeps for itself (NamedSnapshotSaveRequest.name's description). */
export const BOAT_RESERVED_SNAPSHOT_NAMES = ["latest", "tree", "pull", "rm", "save", "current", "self", "new"] as const;

/** Environment variable names a request may not set (CreateSandboxRequest.env's description: `invalid_env`). */
export const BOAT_RESERVED_ENV_NAMES = [
  "ASCII_TOKEN",
  "ASCII_API_URL",
  "AGENT_ID",
  "PRODUCT_MODE",
  "ENVIRONMENT_ID",
  "BOAT_ID",
  "SERVICE_PREVIEW_TOKEN",
  "BOAT_CLI_TOKEN",
] as const;

/** The sandbox states (Sandbox.state). */
export const BOAT_SANDBOX_STATES = [
  "init",
  "provisioning",
  "provisioned",
  "cloning",
  "ready",
  "idle",
  "running",
  "archiving",
  "archived",
  "error",
  "cancelled",
] as const;

/** True when a path, relative ones taken from the work directory and `..` folded, lands under /home/user or /tmp. */
export function resolvesUnderFileRoots(path: string): boolean {
  const full = posix.resolve(BOAT_WORK_DIRECTORY, path);
  return BOAT_FILE_ROOTS.some((root) => full === root || full.startsWith(`${root}/`));
}

/** True when a path is relative and, `..` folded, stays inside the work directory. */
export function staysInWorkDirectory(path: string): boolean {
  if (path.startsWith("/")) return false;
  const full = posix.resolve(BOAT_WORK_DIRECTORY, path);
  return full === BOAT_WORK_DIRECTORY || full.startsWith(`${BOAT_WORK_DIRECTORY}/`);
}

// ---------------------------------------------------------------- building blocks

const dateTime = z.iso.datetime({ offset: true });
const nullableDateTime = dateTime.nullable();
const machineType = z.enum(["small", "default", "large"]);
const encoding = z.enum(["utf8", "base64"]);
/** ttlSeconds in CreateSandboxRequest, ResumeRequest, UpdateSandboxRequest: 1 s..30 days, or null for no auto-stop. */
const ttlSeconds = z.int().min(1).max(2_592_000).nullable();

/** A query value that must be a decimal integer in a range (query values arrive as strings). */
export function integerString(min: number, max: number) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]*)$/, "must be a decimal integer")
    .refine((value) => Number(value) >= min && Number(value) <= max, `must be between ${min} and ${max}`);
}

/**
 * Per-sandbox env (CreateSandboxRequest.env; ResumeRequest.env takes the same
 * rules): names `[A-Za-z_][A-Za-z0-9_]{0,127}`, no reserved name, at most 100
 * variables and 64 KB in all (counted here as the UTF-8 bytes of names and
 * values, 65,536 at most: the YAML does not say what the 64 KB counts).
 */
const sandboxEnv = z.record(z.string(), z.string()).superRefine((env, ctx) => {
  const names = Object.keys(env);
  let bytes = 0;
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) ctx.addIssue({ code: "custom", message: `bad env name ${name}` });
    if ((BOAT_RESERVED_ENV_NAMES as readonly string[]).includes(name)) {
      ctx.addIssue({ code: "custom", message: `env name ${name} is reserved` });
    }
    bytes += Buffer.byteLength(name) + Buffer.byteLength(env[name] ?? "");
  }
  if (names.length > 100) ctx.addIssue({ code: "custom", message: "more than 100 env variables" });
  if (bytes > 65_536) ctx.addIssue({ code: "custom", message: "env over 64 KB" });
});

/**
 * A schema that checks a value with the one `choose` picks for it: a union
 * whose members' own messages survive (zod's union reports only "Invalid input").
 */
export function checkedBy(choose: (value: unknown) => z.ZodType) {
  return z.unknown().superRefine((value, ctx) => {
    const result = choose(value).safeParse(value);
    if (result.success) return;
    for (const issue of result.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
  });
}

// ---------------------------------------------------------------- answers

/** ErrorEnvelope: every failure, its code both at the top and under `error`. */
export const boatErrorEnvelope = z.looseObject({
  ok: z.boolean(),
  type: z.string(),
  status: z.int(),
  code: z.string(),
  message: z.string(),
  error: z.looseObject({
    code: z.string(),
    message: z.string(),
    status: z.int(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
  requestId: z.string(),
});

/** SuccessBase: `ok` and the `type` discriminator every success carries. */
const successBase = { ok: z.boolean(), type: z.string() };

/** Sandbox: one sandbox as create, get, list and the actions report it. */
export const boatSandbox = z.looseObject({
  id: z.string().regex(BOAT_SANDBOX_ID_PATTERN),
  name: z.string(),
  state: z.enum(BOAT_SANDBOX_STATES),
  error: z.string().nullable().optional(),
  health: z.enum(["ok", "degraded"]).optional(),
  healthReason: z.string().nullable().optional(),
  degradedSince: nullableDateTime.optional(),
  type: machineType.optional(),
  vcpu: z.int().optional(),
  memoryGB: z.int().optional(),
  billingMultiplier: z.number().optional(),
  machineProvider: z.enum(["hetzner", "baremetal"]).nullable().optional(),
  url: z.url().nullable().optional(),
  ip: z.string().nullable().optional(),
  sshEndpoint: z.string().nullable().optional(),
  createdAt: nullableDateTime.optional(),
  updatedAt: nullableDateTime.optional(),
  archiveAfter: nullableDateTime.optional(),
  desktopAvailable: z.boolean(),
  desktopUrl: z.url().nullable().optional(),
  snapshots: z.boolean().optional(),
  snapshotAvailable: z.boolean(),
  snapshotCompletedAt: nullableDateTime.optional(),
  snapshotVerifiedAt: nullableDateTime.optional(),
  team: z.looseObject({ id: z.string(), name: z.string() }).nullable().optional(),
  createdBy: z.string().nullable().optional(),
  createdById: z.string().nullable().optional(),
  access: z.enum(["owner", "use", "view"]).optional(),
  holdsCreatorLogins: z.boolean().optional(),
  wipePendingUntilRestart: z.boolean().optional(),
  subdomain: z.string().nullable().optional(),
  lastSnapshotAttemptAt: nullableDateTime.optional(),
  lastSnapshotStatus: z.enum(["queued", "in_progress", "completed", "failed", "cancelled"]).nullable().optional(),
  setupStatus: z.enum(["pending", "running", "done", "failed"]).nullable().optional(),
  setupError: z.string().nullable().optional(),
  environment: z.string().nullable().optional(),
  environmentVersion: z.int().nullable().optional(),
});

/**
 * Sandbox.state's description: a `cancelled` sandbox (its create or fork got no
 * machine) is reported once by GET with only `id`, `state` and `error`, then
 * answers 404; the required name and flags are then absent.
 */
export const boatCancelledSandbox = z.looseObject({
  id: z.string().regex(BOAT_SANDBOX_ID_PATTERN),
  state: z.literal("cancelled"),
  error: z.string().nullable(),
});

/** PageInfo: the cursor for the next page of a list. */
export const boatPageInfo = z.looseObject({ nextCursor: z.string().nullable(), hasMore: z.boolean(), limit: z.int() });

/** CreateSandboxResponse (202 of create). */
export const boatCreateSandboxResponse = z.looseObject({
  ...successBase,
  type: z.literal("sandbox.created"),
  status: z.enum(["provisioning", "ready"]),
  ttlSeconds: z.int().nullable(),
  sandbox: boatSandbox,
  giftLimitNotice: z.string().optional(),
});

/** SandboxInfoResponse (get, update); `type` is only an example (`sandbox.info`; update answers `sandbox.updated`). */
export const boatSandboxInfoResponse = z.looseObject({
  ...successBase,
  sandbox: boatSandbox,
  giftLimitNotice: z.string().optional(),
});

/** SandboxListResponse (sandboxes). */
export const boatSandboxListResponse = z.looseObject({
  ...successBase,
  type: z.literal("sandbox.list"),
  sandboxes: z.array(boatSandbox),
  pageInfo: boatPageInfo.optional(),
});

/** SandboxActionResponse (stop, resume): `type` and `status` are free strings in the YAML (`sandbox.stopping`/`archiving`...). */
export const boatSandboxActionResponse = z.looseObject({
  ...successBase,
  id: z.string(),
  status: z.string(),
  sandbox: boatSandbox.nullable().optional(),
  giftLimitNotice: z.string().optional(),
  conversationId: z.string().optional(),
});

/** DeletionOperation: an accepted, irreversible purge running in the background. */
export const boatDeletionOperation = z.looseObject({
  id: z.string().regex(BOAT_DELETION_OPERATION_ID_PATTERN),
  kind: z.enum(["sandbox", "snapshot"]),
  targetId: z.string(),
  reason: z.enum(["explicit", "zdr", "account"]),
  status: z.enum(["pending", "processing", "blocked", "completed"]),
  stage: z
    .enum([
      "removing",
      "waiting_for_uploads",
      "kept_for_newer_snapshots",
      "waiting_for_restore",
      "retrying",
      "completed",
    ])
    .optional(),
  expectedBy: nullableDateTime.optional(),
  attemptCount: z.int().min(0),
  requestedAt: dateTime,
  completedAt: nullableDateTime,
});

/** DeletionOperationResponse (deleteSandbox, getDeletionOperation). */
export const boatDeletionOperationResponse = z.looseObject({
  ...successBase,
  type: z.enum(["deletion.operation", "sandbox.deleting", "snapshot.deleting"]),
  operation: boatDeletionOperation,
});

/** CommandResponse: a synchronous command's result. */
export const boatCommandResponse = z.looseObject({
  ...successBase,
  type: z.literal("command.finished"),
  success: z.boolean(),
  exitCode: z.int().nullable(),
  signal: z.string().nullable().optional(),
  oomKilled: z.boolean().optional(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean().optional(),
  stderrTruncated: z.boolean().optional(),
  timedOut: z.boolean(),
  cwd: z.string().optional(),
  startedAt: dateTime.optional(),
  finishedAt: dateTime.optional(),
});

/** CommandStartedResponse: a detached command's process id, to poll commandStatus with. */
export const boatCommandStarted = z.looseObject({
  ...successBase,
  type: z.literal("command.started"),
  success: z.boolean(),
  processId: z.int(),
  pid: z.int(),
  command: z.string(),
  cwd: z.string().optional(),
  startedAt: dateTime,
  logPath: z.string().optional(),
  errLogPath: z.string().optional(),
});

/** CommandStreamFrame: one NDJSON line of a `stream: true` command. */
export const boatCommandStreamFrame = z.looseObject({
  type: z.enum(["started", "stdout", "stderr", "exit", "error"]),
  data: z.string().optional(),
  exitCode: z.int().nullable().optional(),
  success: z.boolean().optional(),
  timedOut: z.boolean().optional(),
  error: z.string().optional(),
  message: z.string().optional(),
  retryable: z.boolean().optional(),
});

/** CommandStatusResponse: a detached command's state and log tails. */
export const boatCommandStatus = z.looseObject({
  ...successBase,
  type: z.literal("command.status"),
  success: z.boolean(),
  processId: z.int(),
  pid: z.int().optional(),
  status: z.enum(["running", "exited", "lost"]),
  known: z.boolean().optional(),
  running: z.boolean(),
  exitCode: z.int().nullable(),
  signal: z.string().nullable().optional(),
  oomKilled: z.boolean().optional(),
  command: z.string().nullable().optional(),
  cwd: z.string().nullable().optional(),
  startedAt: nullableDateTime.optional(),
  finishedAt: nullableDateTime.optional(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean().optional(),
  stderrTruncated: z.boolean().optional(),
  logPath: z.string().optional(),
  errLogPath: z.string().optional(),
});

/** FileReadResponse (readFile). */
export const boatFileRead = z.looseObject({
  ...successBase,
  type: z.literal("file.read"),
  success: z.boolean(),
  path: z.string(),
  encoding,
  size: z.int(),
  content: z.string(),
});

/** FileWriteResponse (writeFile). */
export const boatFileWritten = z.looseObject({
  ...successBase,
  type: z.literal("file.written"),
  success: z.boolean(),
  path: z.string(),
  encoding,
  size: z.int(),
});

/** HostPortResponse: only `ok` and `type` are required; `url` carries `_token` unless the port is public. */
export const boatHostPortResponse = z.looseObject({
  ...successBase,
  success: z.boolean().optional(),
  port: z.int().optional(),
  url: z.url().optional(),
  isProtected: z.boolean().optional(),
  access: z.enum(["private", "public"]).optional(),
});

/**
 * NamedSnapshot: a frozen, never-expiring copy of a sandbox's disk under a
 * name. Its description also says `snapshotId` is there once `ready` and
 * `error` only when `failed`.
 */
export const boatNamedSnapshot = z
  .looseObject({
    name: z.string().regex(BOAT_SNAPSHOT_NAME_PATTERN),
    status: z.enum(["saving", "ready", "failed"]),
    error: z.string().optional(),
    sourceSandboxId: z.string(),
    snapshotId: z.string().optional(),
    type: z.string().optional(),
    sizeBytes: z.int().optional(),
    createdAt: dateTime,
  })
  .refine((s) => s.status !== "ready" || s.snapshotId !== undefined, "a ready named snapshot has a snapshotId")
  .refine((s) => s.error === undefined || s.status === "failed", "only a failed named snapshot has an error");

/** NamedSnapshotListResponse (listNamedSnapshots). */
export const boatNamedSnapshotList = z.looseObject({
  ...successBase,
  type: z.literal("snapshot.named.list"),
  snapshots: z.array(boatNamedSnapshot),
});

/** NamedSnapshotInfoResponse (getNamedSnapshot). */
export const boatNamedSnapshotInfo = z.looseObject({
  ...successBase,
  type: z.literal("snapshot.named.info"),
  snapshot: boatNamedSnapshot,
});

/** NamedSnapshotSavingResponse (202 of saveNamedSnapshot): the operation's description says the snapshot is then `saving`. */
export const boatNamedSnapshotSaving = z.looseObject({
  ...successBase,
  type: z.literal("snapshot.named.saving"),
  status: z.literal("saving"),
  snapshot: boatNamedSnapshot.refine((s) => s.status === "saving", "a save is answered with the snapshot saving"),
});

/** NamedSnapshotDeletedResponse (deleteNamedSnapshot). */
export const boatNamedSnapshotDeleted = z.looseObject({
  ...successBase,
  type: z.literal("snapshot.named.deleted"),
  name: z.string(),
  status: z.literal("deleted"),
});

// ---------------------------------------------------------------- requests

/** CreateSandboxRequest. `ttlSeconds: "infinite"` (legacy, per its description) is refused: new clients send null. */
export const boatCreateSandboxRequest = z.strictObject({
  type: machineType.optional(),
  ttlSeconds: ttlSeconds.optional(),
  env: sandboxEnv.optional(),
  environment: z.string().optional(),
  noEnv: z.boolean().optional(),
  snapshots: z.boolean().optional(),
  failFast: z.boolean().optional(),
  setupScript: z.string().max(65_536).optional(),
  org: z.string().optional(),
  teamId: z.string().optional(),
  from: z.string().optional(),
});

/** UpdateSandboxRequest; `subdomain`'s description adds no double hyphen and no `-desktop` or `-<number>` ending. */
export const boatUpdateSandboxRequest = z.strictObject({
  name: z.string().min(1).max(120).optional(),
  ttlSeconds: ttlSeconds.optional(),
  subdomain: z
    .string()
    .min(3)
    .max(40)
    .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/)
    .refine((s) => !s.includes("--"), "no double hyphen")
    .refine((s) => !/-(desktop|[0-9]+)$/.test(s), "the -desktop and -<number> endings are reserved")
    .optional(),
});

/** StopRequest. */
export const boatStopRequest = z.strictObject({ force: z.boolean().optional() });

/** ResumeRequest. */
export const boatResumeRequest = z.strictObject({
  failFast: z.boolean().optional(),
  type: machineType.optional(),
  env: sandboxEnv.optional(),
  environment: z.string().optional(),
  noEnv: z.boolean().optional(),
  ttlSeconds: ttlSeconds.optional(),
});

/** CommandRequest; `cwd` is "relative ... inside the sandbox work directory", so an absolute one or one that climbs out is refused. */
export const boatCommandRequest = z.strictObject({
  command: z.string(),
  cwd: z
    .string()
    .refine(staysInWorkDirectory, "cwd must be relative to the work directory and stay inside it")
    .optional(),
  timeoutSeconds: z.int().min(1).max(600).optional(),
  detached: z.boolean().optional(),
  stream: z.boolean().optional(),
});

/** A file path as FileWriteRequest.path and readFile's `path` describe it (else 400 invalid_path). */
export const boatFilePath = z
  .string()
  .min(1)
  .refine(resolvesUnderFileRoots, "the path must resolve under /home/user or /tmp");

/** FileWriteRequest. */
export const boatFileWriteRequest = z.strictObject({
  path: boatFilePath,
  content: z.string(),
  encoding: encoding.optional(),
});

/** HostPortRequest. */
export const boatHostPortRequest = z.strictObject({
  port: z.int().min(1).max(65_535),
  public: z.boolean().optional(),
  title: z.string().optional(),
});

/** NamedSnapshotSaveRequest; its description reserves some names. */
export const boatNamedSnapshotSaveRequest = z.strictObject({
  sandboxId: z.string(),
  name: z
    .string()
    .regex(BOAT_SNAPSHOT_NAME_PATTERN)
    .refine((name) => !(BOAT_RESERVED_SNAPSHOT_NAMES as readonly string[]).includes(name), "that name is reserved"),
});
