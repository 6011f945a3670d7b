// The CreateOS sandbox API's wire shapes, written here from the service's
// official SDKs (never from this package's client):
//   - TS: @nodeops-createos/sandbox 0.7.1, dist/types.d.ts (the SDK's
//     src/types.ts, "Every shape here mirrors the Go control-plane ...
//     structs"), dist/http.js (JSend unwrapping, paging) and dist/errors.js;
//   - Go: NodeOps-app/createos-go-sdk structs/requests.go,
//     structs/responses.go and structs/enums.go (managed processes, which
//     the TS SDK does not model: its COMPATIBILITY.md, "Endpoints not
//     modeled").
// `omitempty` fields are optional; the server omits them rather than
// sending null (types.ts, SandboxView's comment).
import { z } from "zod";

/** types.ts SandboxStatus, enums.go SandboxStatus. */
export const sandboxStatus = z.enum([
  "creating",
  "running",
  "pausing",
  "paused",
  "resuming",
  "forking",
  "error",
  "destroying",
  "destroyed",
  "failed",
]);

/** RFC 3339 timestamps (types.ts: created_at, running_at, ...). */
const timestamp = z.iso.datetime({ offset: true });

/** types.ts JSendEnvelope: `success` with the payload. */
export const success = <T extends z.ZodType>(data: T) => z.strictObject({ status: z.literal("success"), data });

/** types.ts FailEnvelope: a client-side refusal; `data` field-keyed, sometimes a plain string. */
export const failEnvelope = z.strictObject({
  status: z.literal("fail"),
  data: z.union([z.record(z.string(), z.unknown()), z.string()]),
});

/** types.ts ErrorEnvelope: the server failed; responses.go JSendEnvelope's message and code. */
export const errorEnvelope = z.strictObject({
  status: z.literal("error"),
  message: z.string(),
  code: z.number().int(),
});

/** types.ts NetworkEntry / DiskAttachment, as create takes them. */
const networkEntry = z.strictObject({ id: z.string() });
const diskAttachment = z.strictObject({
  disk_id: z.string(),
  mount_path: z.string(),
  sub_path: z.string().optional(),
});

/** types.ts CreateSandboxRequest (requests.go CreateSandboxRequest): only `shape` is required. */
export const createSandboxRequest = z.strictObject({
  shape: z.string().min(1),
  rootfs: z.string().optional(),
  name: z.string().optional(),
  networks: z.array(networkEntry).optional(),
  disk_mib: z.number().int().nonnegative().optional(),
  egress: z.array(z.string()).optional(),
  envs: z.record(z.string(), z.string()).optional(),
  ssh_pubkeys: z.array(z.string()).optional(),
  host_id: z.string().optional(),
  node_selector: z.record(z.string(), z.string()).optional(),
  ingress_enabled: z.boolean().optional(),
  disks: z.array(diskAttachment).optional(),
  region: z.string().optional(),
  // types.ts: "Valid range 60–86400"; COMPATIBILITY.md "Idle auto-pause".
  auto_pause_after_seconds: z.number().int().min(60).max(86_400).optional(),
});

/**
 * types.ts CreateSandboxResponse with responses.go CreateSandboxResponse's
 * `status` (the Go struct carries it; the TS one does not, and the TS SDK
 * seeds `running` itself: client.js createSandbox).
 */
export const createSandboxResponse = z.strictObject({
  id: z.string(),
  status: sandboxStatus.optional(),
  name: z.string().optional(),
  ip: z.string(),
  shape: z.string(),
  rootfs: z.string().optional(),
  vcpu: z.number().int(),
  mem_mib: z.number().int(),
  disk_mib: z.number().int(),
  spawn_ms: z.number(),
  // COMPATIBILITY.md: the server sends `egress` omitempty, though types.ts marks it required.
  egress: z.array(z.string()).optional(),
  bandwidth_quota_bytes: z.number().int(),
  ingress_url_template: z.string().includes("<port>").optional(),
});

/** types.ts SandboxView (responses.go SandboxResponse). */
export const sandboxView = z.strictObject({
  id: z.string(),
  status: sandboxStatus,
  ip: z.string().optional(),
  vcpu: z.number().int(),
  mem_mib: z.number().int(),
  disk_mib: z.number().int(),
  created_at: timestamp,
  ingress_enabled: z.boolean(),
  ingress_url_template: z.string().includes("<port>").optional(),
  name: z.string().optional(),
  running_at: timestamp.optional(),
  destroyed_at: timestamp.optional(),
  spawn_ms: z.number().optional(),
  shape: z.string().optional(),
  rootfs: z.string().optional(),
  region: z.string().optional(),
  egress: z.array(z.string()).optional(),
  envs: z.array(z.string()).optional(),
  ssh_pubkeys: z.array(z.string()).optional(),
  created_by: z.string().optional(),
  bandwidth_ingress_bytes: z.number().int().optional(),
  paused_at: timestamp.optional(),
  last_resumed_at: timestamp.optional(),
  forked_from: z.string().optional(),
  auto_pause_after_seconds: z.number().int().optional(),
});

/** COMPATIBILITY.md "List endpoints are now paginated": `{ data: [...], pagination }` (responses.go PaginatedResponse). */
export const paginated = <T extends z.ZodType>(item: T) =>
  z.strictObject({
    data: z.array(item),
    pagination: z.strictObject({
      total: z.number().int().nonnegative(),
      limit: z.number().int().nonnegative(),
      offset: z.number().int().nonnegative(),
      count: z.number().int().nonnegative(),
    }),
  });

/** The list's query: http.js iteratePages sends `limit` (the server clamps it at 500) and `offset`; types.ts ListSandboxesOptions `status`. */
export const listSandboxesQuery = z.strictObject({
  limit: z.string().regex(/^\d+$/).optional(),
  offset: z.string().regex(/^\d+$/).optional(),
  status: z.enum(["running", "creating", "destroyed", "failed"]).optional(),
});

/** types.ts DestroyedResponse. */
export const destroyedResponse = z.strictObject({
  id: z.string(),
  status: z.enum(["destroying", "destroyed"]),
});

/** types.ts SetEgressRequest: "`null`, omitted, or `[]` means allow all". */
export const setEgressRequest = z.strictObject({ egress: z.array(z.string()).nullable().optional() });

/** types.ts EgressView (the REST page Sandbox/REST-API/Egress answers the same `{ id, egress }`). */
export const egressView = z.strictObject({ id: z.string(), egress: z.array(z.string()) });

/** types.ts PatchSandboxRequest. */
export const patchSandboxRequest = z.strictObject({
  ingress_enabled: z.boolean().optional(),
  auto_pause_after_seconds: z.number().int().min(60).max(86_400).optional(),
  disable_auto_pause: z.boolean().optional(),
});

/**
 * `POST /exec`: types.ts ExecRequest (`cmd`, `args`, `stream`). The Go
 * SDK's RunCommandRequest also sends `stdin` and `env`; the TS SDK's
 * types.ts says the server drops both ("Go's proto.ExecRequest has no
 * stdin field, and the control plane overwrites env"), so they are
 * accepted here and have no effect.
 */
export const execRequest = z.strictObject({
  cmd: z.string().min(1),
  args: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  stdin: z.string().optional(),
  env: z.record(z.string(), z.string()).optional(),
});

/** types.ts ExecResponse / ExecResult. */
export const execResponse = z.strictObject({
  result: z.strictObject({
    stdout: z.string(),
    stderr: z.string(),
    exit_code: z.number().int(),
    error: z.string().optional(),
  }),
  exec_ms: z.number(),
});

/** The files routes' `?path=` (sandbox.js SandboxFiles.upload/download: an absolute path inside the sandbox). */
export const filePathQuery = z.strictObject({ path: z.string().startsWith("/") });

/**
 * What `PUT /files` answers is not published: the Go SDK (sandbox/files.go
 * Upload) reads only the status, the TS SDK (http.js unwrapJSend) needs a
 * JSend envelope and ignores its data. Any data is accepted.
 */
export const fileWritten = success(z.unknown());

/** types.ts OKResponse. */
export const okResponse = z.strictObject({ ok: z.boolean() });

// ---- managed processes (Go SDK: structs/requests.go, responses.go, enums.go) ----

/** requests.go PTYSize. */
const ptySize = z.strictObject({ rows: z.number().int().optional(), cols: z.number().int().optional() });

/** requests.go ManagedProcessCreateRequest. */
export const processCreateRequest = z.strictObject({
  cmd: z.string().optional(),
  args: z.array(z.string()).optional(),
  cwd: z.string().optional(),
  env: z.record(z.string(), z.string()).optional(),
  pty: ptySize.optional(),
});

/** responses.go ManagedProcess (states: enums.go ManagedProcessState). */
export const managedProcess = z.strictObject({
  process_id: z.string(),
  kind: z.enum(["process", "pty"]),
  pid: z.number().int(),
  state: z.enum(["starting", "running", "terminating", "exited", "failed"]),
  leader_exited: z.boolean(),
  tree_exited: z.boolean(),
  created_at: timestamp,
  finished_at: timestamp.optional(),
  exit_code: z.number().int().optional(),
  signal: z.string().optional(),
  cmd: z.string().optional(),
  args: z.array(z.string()).optional(),
  cwd: z.string().optional(),
  foreground: z
    .strictObject({ pid: z.number().int().optional(), cmd: z.string(), args: z.array(z.string()).optional() })
    .optional(),
  output: z.strictObject({
    oldest_seq: z.number().int(),
    newest_seq: z.number().int(),
    bytes: z.number().int(),
  }),
});

/** responses.go ManagedProcessListResponse. */
export const managedProcessList = z.strictObject({ processes: z.array(managedProcess) });

/** requests.go ManagedProcessInputRequest / responses.go ManagedProcessInputResponse. */
export const processInputRequest = z.strictObject({ data_base64: z.base64() });
export const processInputResponse = z.strictObject({ input_seq: z.number().int() });

/** requests.go ManagedProcessSignalRequest with enums.go ManagedProcessSignal. */
export const processSignalRequest = z.strictObject({
  signal: z.enum(["SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGWINCH"]),
});

/** processes.go Connect: `?after=<seq>`. */
export const connectQuery = z.strictObject({ after: z.string().regex(/^\d+$/).optional() });

/** processes.go Wait: `?scope=leader|tree` and `timeout_ms` (enums.go ManagedProcessWaitScope). */
export const waitQuery = z.strictObject({
  scope: z.enum(["leader", "tree"]).optional(),
  timeout_ms: z.string().regex(/^\d+$/).optional(),
});

/** processes.go Delete: `?grace_ms=`. */
export const deleteProcessQuery = z.strictObject({ grace_ms: z.string().regex(/^\d+$/).optional() });

/** responses.go ManagedProcessConnectFrame (one NDJSON line of `/connect`; enums.go event types and streams). */
export const processConnectFrame = z.strictObject({
  type: z.enum(["data", "exit", "heartbeat", "error"]),
  seq: z.number().int().optional(),
  stream: z.enum(["stdout", "stderr", "pty"]).optional(),
  data_base64: z.base64().optional(),
  exit_code: z.number().int().optional(),
  signal: z.string().optional(),
  error: z.string().optional(),
  oldest_available_seq: z.number().int().optional(),
});

/** No query at all. */
export const noQuery = z.strictObject({});

// ---- templates (TS SDK types.ts; Go structs/requests.go, responses.go) ----

/** types.ts TemplateCreateRequest: a Dockerfile built into a rootfs. */
export const templateCreateRequest = z.strictObject({
  name: z.string().min(1),
  dockerfile: z.string().min(1),
  base: z.string().optional(),
});

/** types.ts TemplateView (statuses: TemplateStatus). */
export const templateView = z.strictObject({
  id: z.string(),
  name: z.string(),
  base: z.string(),
  status: z.enum(["pending", "building", "ready", "failed"]),
  ext4_size_bytes: z.number().int(),
  created_at: timestamp,
  built_at: timestamp.optional(),
  dockerfile: z.string().optional(),
});

/** client.js TemplatesApi.get: `include=dockerfile` (types.ts GetTemplateOptions). */
export const getTemplateQuery = z.strictObject({ include: z.literal("dockerfile").optional() });

/** The templates list's paging (http.js iteratePages). */
export const pageQuery = z.strictObject({
  limit: z.string().regex(/^\d+$/).optional(),
  offset: z.string().regex(/^\d+$/).optional(),
});
