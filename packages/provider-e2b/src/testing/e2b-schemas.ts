// The shapes of E2B's service as its published sources state them, written
// from them and never from the client in this package, so an emulator held
// to them checks the client against the service and not against itself.
//   - Control plane: e2b-dev/infra spec/openapi.yml (cited "openapi.yml
//     <schema>"). The SDK the provider pins (e2b 2.51.0) calls `/v2/sandboxes`
//     paths that this spec lacks; their schemas are taken from the types 2.51.0
//     generated from a newer spec (cited "e2b 2.51.0 index.d.ts <schema>").
//   - envd: e2b-dev/infra packages/envd/spec/envd.yaml (REST `/files`,
//     `/health`) and spec/process/process.proto, spec/filesystem/filesystem.proto
//     (Connect RPCs, JSON codec: protojson field names in lowerCamelCase).
// Request bodies of the REST API are strict (a misspelt field is a
// violation); answers are loose about extra fields. Connect messages are loose
// both ways: connect-go's JSON codec discards unknown fields.
import { z } from "zod";

// ---------------------------------------------------------------- building blocks

const int32 = z
  .int()
  .min(-(2 ** 31))
  .max(2 ** 31 - 1);
const dateTime = z.iso.datetime({ offset: true });
const stringMap = z.record(z.string(), z.string());

/** A query value that must be a decimal integer in a range (query values arrive as strings). */
export function integerString(min: number, max: number) {
  return z
    .string()
    .regex(/^-?(0|[1-9][0-9]*)$/, "must be a decimal integer")
    .refine((value) => Number(value) >= min && Number(value) <= max, `must be between ${min} and ${max}`);
}

/** Sandbox ids the API mints: "i" and 20 characters of [a-z0-9] (infra packages/shared/pkg/id/id.go). */
export const E2B_SANDBOX_ID = /^[a-z0-9]+$/;

/** A `{sandboxID}` path parameter: any string in the spec (parameters.sandboxID); the handlers check it (ShortID). */
export const SANDBOX_ID_PARAMETER = "[^/]+";

/**
 * ShortID (infra packages/api/internal/utils/split.go): an id may carry one
 * `-<clientID>` suffix, the part before it is the id, which must match
 * ValidateSandboxID's [a-z0-9]+; anything else is 400 "invalid sandbox ID".
 */
export function shortSandboxId(composite: string): string | undefined {
  const parts = composite.split("-");
  if (parts.length > 2) return undefined;
  const id = parts[0] as string;
  return E2B_SANDBOX_ID.test(id) ? id : undefined;
}

/** openapi.yml Error: every control-plane failure. */
export const apiError = z.looseObject({ code: int32, message: z.string(), error_code: z.string().optional() });

/** openapi.yml CPUCount, MemoryMB, DiskSizeMB. */
const cpuCount = int32.min(1);
const memoryMB = int32.min(128);
const diskSizeMB = int32.min(0);

/**
 * openapi.yml SandboxNetworkConfig (l.337-370), with SandboxEgressProxyConfig
 * (l.419) and SandboxNetworkRule / SandboxNetworkTransform (l.399-417); e2b
 * 2.51.0's generated type adds `httpsPorts` (index.d.ts SandboxNetworkConfig),
 * which the spec at infra HEAD lacks. Exact: an unknown field is a violation.
 */
export const sandboxNetworkConfig = z.strictObject({
  allowPublicTraffic: z.boolean().optional(),
  allowOut: z.array(z.string()).optional(),
  denyOut: z.array(z.string()).optional(),
  egressProxy: z
    .strictObject({
      address: z.string(),
      username: z.string().max(255).optional(),
      password: z.string().max(255).optional(),
    })
    .nullable()
    .optional(),
  httpsPorts: z.array(int32).optional(),
  maskRequestHost: z.string().optional(),
  rules: z
    .record(
      z.string(),
      z.array(z.strictObject({ transform: z.strictObject({ headers: stringMap.optional() }).optional() })),
    )
    .optional(),
});
const network = sandboxNetworkConfig;

/** openapi.yml Mcp, SandboxIam, SandboxVolumeMount, SandboxAutoResumeConfig. */
const mcp = z.record(z.string(), z.unknown()).nullable();
const iam = z.strictObject({
  tokens: z.record(z.string(), z.looseObject({ audience: z.string(), tokenType: z.string() })),
});
const volumeMount = z.looseObject({ name: z.string(), path: z.string() });
const autoResume = z.strictObject({ enabled: z.boolean() });
const sandboxState = z.enum(["running", "paused"]);

// ---------------------------------------------------------------- control-plane requests

/** openapi.yml NewSandbox (POST /sandboxes): timeout int32 minimum 0, default 15. */
const newSandboxFields = {
  templateID: z.string(),
  timeout: int32.min(0).optional(),
  autoPause: z.boolean().optional(),
  autoPauseMemory: z.boolean().optional(),
  autoResume: autoResume.optional(),
  secure: z.boolean().optional(),
  allow_internet_access: z.boolean().optional(),
  network: network.optional(),
  metadata: stringMap.optional(),
  envVars: stringMap.optional(),
  mcp: mcp.optional(),
  iam: iam.optional(),
  volumeMounts: z.array(volumeMount).optional(),
};

/**
 * POST /sandboxes as E2B's spec has it and as Novita's service takes it:
 * novita-sandbox 2.1.1 (dist/index.js createSandbox, l.6570-6640) also sends
 * `nodeID` and `secrets`, fields of Novita's own.
 */
export const newSandboxV1 = z.strictObject({
  ...newSandboxFields,
  nodeID: z.string().optional(),
  secrets: stringMap.optional(),
});

/**
 * e2b 2.51.0 index.d.ts NewSandboxV2: no `secure` (always secured), timeout
 * default 300. Its minimum of 1 is the server's ([RUNTIME] e2b-dev/runtime
 * sandbox_connect_v2_test.go), not in the generated type.
 */
const { secure: _secure, timeout: _timeout, ...newSandboxV2Fields } = newSandboxFields;
export const newSandboxV2 = z.strictObject({ ...newSandboxV2Fields, timeout: int32.min(1).optional() });

/**
 * openapi.yml ConnectSandbox (v1 connect): `timeout` required, minimum 0.
 * novita-sandbox 2.1.1 (connectSandbox, l.6653-6720) adds `secure`,
 * `allowPublicTraffic` and `network`.
 */
export const connectSandboxV1 = z.strictObject({
  timeout: int32.min(0),
  memory: z.boolean().optional(),
  secure: z.boolean().optional(),
  allowPublicTraffic: z.boolean().optional(),
  network: network.optional(),
});

/** e2b 2.51.0 index.d.ts ConnectSandboxV2: every field optional, the body itself optional. */
export const connectSandboxV2 = z.strictObject({ timeout: int32.min(1).optional(), memory: z.boolean().optional() });

/** openapi.yml SandboxTimeoutRequest. */
export const sandboxTimeoutRequest = z.strictObject({ timeout: int32.min(0) });

/**
 * openapi.yml SandboxPauseRequest (optional body). Novita's legacy domains
 * send `{ sync: false }` (novita-sandbox 2.1.1 pause, l.6422-6445).
 */
export const sandboxPauseRequest = z.strictObject({ memory: z.boolean().optional(), sync: z.boolean().optional() });

const sandboxStates = z
  .string()
  .refine((value) => value.split(",").every((s) => s === "running" || s === "paused"), "each state running or paused");

/** GET /v2/sandboxes parameters (openapi.yml /v2/sandboxes, paginationLimit, paginationNextToken). */
export const listSandboxesQuery = z.strictObject({
  metadata: z.string().optional(),
  // style form, explode false: one comma-separated value.
  state: sandboxStates.optional(),
  order: z.enum(["asc", "desc"]).optional(),
  startedAfter: dateTime.optional(),
  template: z.string().optional(),
  nextToken: z.string().optional(),
  limit: integerString(1, 100).optional(),
});

/** openapi.yml TemplateBuildRequestV3 (+ minFreeDiskMb from e2b 2.51.0 index.d.ts MinFreeDiskMb). */
export const templateBuildRequestV3 = z.strictObject({
  name: z.string().max(128).optional(),
  tags: z.array(z.string()).optional(),
  alias: z.string().max(128).optional(),
  teamID: z.string().optional(),
  cpuCount: cpuCount.optional(),
  memoryMB: memoryMB.optional(),
  minFreeDiskMb: int32.min(0).optional(),
});

/** openapi.yml TemplateStep, FromImageRegistry (AWSRegistry | GCPRegistry | GeneralRegistry), TemplateBuildStartV2. */
const templateStep = z.strictObject({
  type: z.string(),
  args: z.array(z.string()).optional(),
  filesHash: z.string().optional(),
  force: z.boolean().optional(),
});
const fromImageRegistry = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("aws"),
    awsAccessKeyId: z.string(),
    awsSecretAccessKey: z.string(),
    awsRegion: z.string(),
  }),
  z.strictObject({ type: z.literal("gcp"), serviceAccountJson: z.string() }),
  z.strictObject({ type: z.literal("registry"), username: z.string(), password: z.string() }),
]);
export const templateBuildStartV2 = z.strictObject({
  fromImage: z.string().optional(),
  fromTemplate: z.string().optional(),
  fromImageRegistry: fromImageRegistry.optional(),
  force: z.boolean().optional(),
  steps: z.array(templateStep).optional(),
  startCmd: z.string().optional(),
  readyCmd: z.string().optional(),
});

/** GET /templates/{templateID}/builds/{buildID}/status parameters (openapi.yml). */
export const buildStatusQuery = z.strictObject({
  logsOffset: integerString(0, 2 ** 31 - 1).optional(),
  limit: integerString(0, 100).optional(),
  level: z.enum(["debug", "info", "warn", "error"]).optional(),
});

// ---------------------------------------------------------------- control-plane answers

/** openapi.yml Sandbox: the create and connect answer. */
export const sandbox = z.looseObject({
  templateID: z.string(),
  sandboxID: z.string(),
  alias: z.string().optional(),
  clientID: z.string(),
  envdVersion: z.string(),
  envdAccessToken: z.string().optional(),
  trafficAccessToken: z.string().nullable().optional(),
  domain: z.string().nullable().optional(),
});

const listedFields = {
  templateID: z.string(),
  alias: z.string().optional(),
  sandboxID: z.string(),
  clientID: z.string(),
  startedAt: dateTime,
  endAt: dateTime,
  cpuCount,
  memoryMB,
  diskSizeMB,
  metadata: stringMap.optional(),
  state: sandboxState,
  envdVersion: z.string(),
  volumeMounts: z.array(volumeMount).optional(),
};

/** openapi.yml ListedSandbox: an entry of GET /v2/sandboxes. */
export const listedSandbox = z.looseObject(listedFields);

/** openapi.yml SandboxDetail (GET /sandboxes/{sandboxID}), with SandboxLifecycle. */
export const sandboxDetail = z.looseObject({
  ...listedFields,
  envdAccessToken: z.string().optional(),
  allowInternetAccess: z.boolean().nullable().optional(),
  domain: z.string().nullable().optional(),
  network: network.loose().optional(),
  lifecycle: z.looseObject({ autoResume: z.boolean(), onTimeout: z.enum(["kill", "pause"]) }).optional(),
});

/** openapi.yml TemplateRequestResponseV3. */
export const templateRequestResponseV3 = z.looseObject({
  templateID: z.string(),
  buildID: z.string(),
  public: z.boolean(),
  aliases: z.array(z.string()),
  names: z.array(z.string()),
  tags: z.array(z.string()),
});

/** openapi.yml BuildLogEntry, BuildStatusReason, TemplateBuildInfo. */
const buildLogEntry = z.looseObject({
  timestamp: dateTime,
  message: z.string(),
  level: z.enum(["debug", "info", "warn", "error"]),
  step: z.string().optional(),
});
export const templateBuildInfo = z.looseObject({
  templateID: z.string(),
  buildID: z.string(),
  status: z.enum(["building", "waiting", "ready", "error"]),
  logs: z.array(z.string()),
  logEntries: z.array(buildLogEntry),
  reason: z
    .looseObject({ message: z.string(), step: z.string().optional(), logEntries: z.array(buildLogEntry).optional() })
    .optional(),
});

// ---------------------------------------------------------------- envd REST

/** envd.yaml Error: every `/files` failure, and the access-token refusal on any path (api/auth.go). */
export const envdError = z.looseObject({ code: z.int(), message: z.string() });

/** envd.yaml EntryInfo. */
export const entryInfo = z.looseObject({
  path: z.string(),
  name: z.string(),
  type: z.literal("file"),
  metadata: stringMap.optional(),
});

/** envd.yaml parameters FilePath, User, Signature, SignatureExpiration (unix seconds). */
export const filesQuery = z.strictObject({
  path: z.string().optional(),
  username: z.string().optional(),
  signature: z.string().optional(),
  signature_expiration: integerString(-(2 ** 63), 2 ** 63).optional(),
});

/**
 * What the edge answers for a sandbox it cannot route to (unknown, paused,
 * killed): infra packages/shared/pkg/proxy/template/sandbox_not_found.go.
 */
export const sandboxNotFound = z.looseObject({ sandboxId: z.string(), message: z.string(), code: z.literal(502) });

// ---------------------------------------------------------------- Connect (envd RPCs)

/** The Connect protocol's error codes (connectrpc.com/docs/protocol, "Error Codes"). */
export const CONNECT_CODES = [
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
] as const;
export type ConnectCode = (typeof CONNECT_CODES)[number];

/** The HTTP status a unary Connect error travels with (connectrpc.com/docs/protocol, "Error Codes"). */
export const CONNECT_HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** A Connect error body (unary) or the `error` of an end-of-stream message. */
export const connectError = z.looseObject({
  code: z.enum(CONNECT_CODES),
  message: z.string().optional(),
  details: z.array(z.unknown()).optional(),
});

/** protojson: uint32 as a JSON number or a decimal string; bytes as base64 (standard or URL-safe, padding optional). */
const uint32 = z.union([
  z
    .int()
    .min(0)
    .max(2 ** 32 - 1),
  z.string().regex(/^\d+$/),
]);
const bytes = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, "must be base64");

/** process.proto ProcessSelector: a oneof of pid or tag (envd answers an empty one `unimplemented`). */
export const processSelector = z.union([z.looseObject({ pid: uint32 }), z.looseObject({ tag: z.string() })]);

/** process.proto ProcessConfig, PTY, StartRequest (`stdin` absent means true). */
const processConfig = z.looseObject({
  cmd: z.string(),
  args: z.array(z.string()).optional(),
  envs: stringMap.optional(),
  cwd: z.string().optional(),
});
const pty = z.looseObject({ size: z.looseObject({ cols: uint32.optional(), rows: uint32.optional() }).optional() });
export const startRequest = z.looseObject({
  process: processConfig,
  pty: pty.optional(),
  tag: z.string().optional(),
  stdin: z.boolean().optional(),
});

/** process.proto ConnectRequest, ListRequest, UpdateRequest, SendInputRequest, SendSignalRequest, CloseStdinRequest. */
export const connectRequest = z.looseObject({ process: processSelector });
export const listRequest = z.looseObject({});
export const updateRequest = z.looseObject({ process: processSelector, pty: pty.optional() });
const processInput = z.union([z.looseObject({ stdin: bytes }), z.looseObject({ pty: bytes })]);
export const sendInputRequest = z.looseObject({ process: processSelector, input: processInput });
/** process.proto Signal: the enum's names (protojson also takes their numbers). */
const signal = z.union([z.enum(["SIGNAL_UNSPECIFIED", "SIGNAL_SIGTERM", "SIGNAL_SIGKILL"]), z.literal([0, 9, 15])]);
export const sendSignalRequest = z.looseObject({ process: processSelector, signal: signal.optional() });
export const closeStdinRequest = z.looseObject({ process: processSelector });
/** process.proto StreamInputRequest: a oneof of start, data, keepalive. */
export const streamInputRequest = z.union([
  z.looseObject({ start: z.looseObject({ process: processSelector }) }),
  z.looseObject({ data: z.looseObject({ input: processInput }) }),
  z.looseObject({ keepalive: z.looseObject({}) }),
]);

/** process.proto ProcessInfo, ListResponse. */
export const listResponse = z.looseObject({
  processes: z
    .array(z.looseObject({ config: processConfig, pid: uint32.optional(), tag: z.string().optional() }))
    .optional(),
});
/** An empty message (UpdateResponse, SendInputResponse, SendSignalResponse, CloseStdinResponse, RemoveResponse...). */
export const emptyMessage = z.looseObject({});

/**
 * process.proto ProcessEvent: a oneof of start, data, end, keepalive. protojson
 * leaves out fields at their zero value: an end with exit code 0 has no
 * `exitCode`, one with `exited` false has no `exited`.
 */
export const processEvent = z.union([
  z.looseObject({ start: z.looseObject({ pid: uint32.optional() }) }),
  z.looseObject({
    data: z.union([z.looseObject({ stdout: bytes }), z.looseObject({ stderr: bytes }), z.looseObject({ pty: bytes })]),
  }),
  z.looseObject({
    end: z.looseObject({
      exitCode: int32.optional(),
      exited: z.boolean().optional(),
      status: z.string().optional(),
      error: z.string().optional(),
    }),
  }),
  z.looseObject({ keepalive: z.looseObject({}) }),
]);

/** The end-of-stream message (connectrpc.com/docs/protocol, "Streaming-Response"). */
const endOfStream = z.looseObject({
  error: connectError.optional(),
  metadata: z.record(z.string(), z.array(z.string())).optional(),
});

/**
 * A server stream of StartResponse / ConnectResponse as the emulator records
 * it: its messages in order (runs of data events kept as one) and its
 * end-of-stream message. Order (start.go handleStart, connect.go): `start`
 * first, then data and keepalives, then at most one `end`, last.
 */
export const processStream = z
  .looseObject({ messages: z.array(z.looseObject({ event: processEvent })), endOfStream })
  .superRefine((stream, ctx) => {
    const kinds = stream.messages.map((m) => Object.keys(m.event)[0]);
    const issue = (message: string) => ctx.addIssue({ code: "custom", message, path: ["messages"] });
    if (kinds.length > 0 && kinds[0] !== "start") issue("the first event must be start");
    if (kinds.slice(1).includes("start")) issue("start may come only first");
    const end = kinds.indexOf("end");
    if (end >= 0 && end !== kinds.length - 1) issue("end must be the last event");
    if (kinds.length === 0 && !stream.endOfStream.error) issue("a stream without events must end with an error");
  });

/** filesystem.proto requests (the SDK's `files.*` besides read and write). */
export const filesystemRequests = {
  Stat: z.looseObject({ path: z.string().optional() }),
  MakeDir: z.looseObject({ path: z.string().optional() }),
  Move: z.looseObject({ source: z.string().optional(), destination: z.string().optional() }),
  ListDir: z.looseObject({ path: z.string().optional(), depth: uint32.optional() }),
  Remove: z.looseObject({ path: z.string().optional() }),
  WatchDir: z.looseObject({ path: z.string().optional(), recursive: z.boolean().optional() }),
  CreateWatcher: z.looseObject({ path: z.string().optional(), recursive: z.boolean().optional() }),
  GetWatcherEvents: z.looseObject({ watcherId: z.string().optional() }),
  RemoveWatcher: z.looseObject({ watcherId: z.string().optional() }),
} as const;
