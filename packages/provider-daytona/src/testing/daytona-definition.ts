// Daytona as its published definitions state it, as the operations the
// emulator is held to (ServiceRecorder): the REST API's request types in
// @daytona/api-client 0.218.0 (src/api/sandbox-api.js for paths and query
// parameters, src/models/*.d.ts for bodies) and the toolbox daemon's in
// @daytona/toolbox-api-client 0.218.0 (src/api/process-api.js, src/models).
// Statuses the clients' types leave out but the servers answer are added
// with the handler at daytonaio/daytona v0.190.0 named beside them.
import type { ServiceOperation } from "@agent-computer/testing/emulator";
import { z } from "zod";

const API = "@daytona/api-client 0.218.0";
const TOOLBOX = "@daytona/toolbox-api-client 0.218.0";

const ID = "[^/]+";
const apiPath = (rest = "") => new RegExp(`^/api/sandbox${rest}$`);
const toolboxPath = (rest: string) => new RegExp(`^/toolbox/${ID}/process/session${rest}$`);
const noQuery = z.strictObject({});
const stringMap = z.record(z.string(), z.string());

/** src/models/sandbox-state.d.ts: every state the API may report. */
export const SANDBOX_STATES = [
  "creating",
  "restoring",
  "destroyed",
  "destroying",
  "started",
  "stopped",
  "starting",
  "stopping",
  "error",
  "build_failed",
  "pending_build",
  "building_snapshot",
  "unknown",
  "pulling_snapshot",
  "archived",
  "archiving",
  "resizing",
  "snapshotting",
  "forking",
  "pausing",
  "paused",
  "resuming",
] as const;

/** src/models/create-sandbox.d.ts CreateSandbox (create-build-info.d.ts for buildInfo). */
const createSandbox = z.strictObject({
  name: z.string().optional(),
  snapshot: z.string().optional(),
  user: z.string().optional(),
  env: stringMap.optional(),
  labels: stringMap.optional(),
  public: z.boolean().optional(),
  networkBlockAll: z.boolean().optional(),
  networkAllowList: z.string().optional(),
  domainAllowList: z.string().optional(),
  outboundProxyUrl: z.string().optional(),
  otelEndpointOverride: z.string().optional(),
  target: z.string().optional(),
  cpu: z.number().optional(),
  gpu: z.number().optional(),
  gpuType: z.array(z.string()).optional(),
  spot: z.boolean().optional(),
  memory: z.number().optional(),
  disk: z.number().optional(),
  autoStopInterval: z.number().optional(),
  autoPauseInterval: z.number().optional(),
  autoArchiveInterval: z.number().optional(),
  autoDeleteInterval: z.number().optional(),
  ttlMinutes: z.number().optional(),
  volumes: z.array(z.looseObject({ volumeId: z.string(), mountPath: z.string() })).optional(),
  buildInfo: z
    .strictObject({ dockerfileContent: z.string(), contextHashes: z.array(z.string()).optional() })
    .optional(),
  linkedSandbox: z.string().optional(),
  secrets: z.array(stringMap).optional(),
  kvm: z.boolean().optional(),
});

/** src/api/sandbox-api.js listSandboxes: its query parameters (all optional, sent as strings). */
const LIST_QUERY = [
  "cursor",
  "limit",
  "id",
  "name",
  "labels",
  "includeErroredDeleted",
  "includeWarm",
  "states",
  "snapshots",
  "regionIds",
  "sandboxClasses",
  "minCpu",
  "maxCpu",
  "minMemoryGiB",
  "maxMemoryGiB",
  "minDiskGiB",
  "maxDiskGiB",
  "minGpu",
  "maxGpu",
  "isPublic",
  "isRecoverable",
  "createdAtAfter",
  "createdAtBefore",
  "lastEventAfter",
  "lastEventBefore",
  "autoDestroyAtAfter",
  "autoDestroyAtBefore",
  "sort",
  "order",
] as const;
const listQuery = z.strictObject(Object.fromEntries(LIST_QUERY.map((name) => [name, z.string().optional()])));

/** src/models/sandbox.d.ts Sandbox: the fields it requires, the state from the enum. */
const sandbox = z.looseObject({
  id: z.string(),
  organizationId: z.string(),
  name: z.string(),
  user: z.string(),
  env: stringMap,
  labels: stringMap,
  public: z.boolean(),
  networkBlockAll: z.boolean(),
  target: z.string(),
  cpu: z.number(),
  gpu: z.number(),
  memory: z.number(),
  disk: z.number(),
  state: z.enum(SANDBOX_STATES).optional(),
  toolboxProxyUrl: z.string(),
});

/**
 * The API's error body (apps/api/src/filters/all-exceptions.filter.ts catch:
 * path, timestamp, statusCode, error as the status's name, message).
 */
export const apiError = z.strictObject({
  path: z.string(),
  timestamp: z.string(),
  statusCode: z.number(),
  error: z.string(),
  message: z.string(),
});

const apiFailures = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, apiError]));
const COMMON = [400, 401, 403, 404, 409, 422, 500, 502, 503, 504];

/** Operations of one client file: their source named after it, with the failures every one of them may answer. */
function operationsOf(source: (name: string) => string, failures: Record<number, z.ZodType | null>) {
  return (
    name: string,
    method: string,
    path: RegExp,
    ok: Record<number, z.ZodType | null>,
    extra: Partial<ServiceOperation> = {},
  ): ServiceOperation => ({
    name,
    method,
    path,
    source: source(name),
    query: noQuery,
    responses: { ...failures, ...ok },
    ...extra,
  });
}

const rest = operationsOf((name) => `${API} src/api/sandbox-api.js ${name}`, apiFailures(...COMMON));

/** src/models/session-execute-response.d.ts SessionExecuteResponse. */
const executeResponse = z.strictObject({
  cmdId: z.string(),
  exitCode: z.number().optional(),
  output: z.string().optional(),
  stderr: z.string().optional(),
  stdout: z.string().optional(),
});
/** src/models/session-command-logs-response.d.ts. */
const logsResponse = z.strictObject({ output: z.string(), stderr: z.string(), stdout: z.string() });
/** src/models/command.d.ts Command. */
const commandResponse = z.strictObject({ id: z.string(), command: z.string(), exitCode: z.number().optional() });

/** The daemon's error answers are not in the client's types; their bodies are left unchecked. */
const TOOLBOX_FAILURES = Object.fromEntries([400, 401, 404, 409, 410, 500, 502].map((s) => [s, null]));

const toolbox = operationsOf((name) => `${TOOLBOX} src/api/process-api.js ${name}`, TOOLBOX_FAILURES);

export const DAYTONA_OPERATIONS: readonly ServiceOperation[] = [
  rest("createSandbox", "POST", apiPath(), { 200: sandbox }, { body: createSandbox }),
  rest("listSandboxes", "GET", apiPath(), { 200: z.looseObject({ items: z.array(sandbox) }) }, { query: listQuery }),
  rest(
    "getSandbox",
    "GET",
    apiPath(`/${ID}`),
    { 200: sandbox },
    {
      query: z.strictObject({ verbose: z.string().optional() }),
    },
  ),
  rest("deleteSandbox", "DELETE", apiPath(`/${ID}`), { 200: sandbox }),
  rest("startSandbox", "POST", apiPath(`/${ID}/start`), { 200: sandbox }),
  rest(
    "stopSandbox",
    "POST",
    apiPath(`/${ID}/stop`),
    { 200: sandbox },
    {
      query: z.strictObject({ force: z.string().optional() }),
    },
  ),
  rest("archiveSandbox", "POST", apiPath(`/${ID}/archive`), { 200: sandbox }),
  rest("pauseSandbox", "POST", apiPath(`/${ID}/pause`), { 200: sandbox }),
  rest(
    "updateLastActivity",
    "POST",
    apiPath(`/${ID}/last-activity`),
    { 201: null, 204: null },
    {
      body: z.strictObject({ activityType: z.string().optional() }).optional(),
    },
  ),
  rest("setAutostopInterval", "POST", apiPath(`/${ID}/autostop/\\d+`), { 200: sandbox, 201: null, 204: null }),
  rest("getToolboxProxyUrl", "GET", apiPath(`/${ID}/toolbox-proxy-url`), { 200: z.strictObject({ url: z.string() }) }),
  rest(
    "getSignedPortPreviewUrl",
    "GET",
    apiPath(`/${ID}/ports/\\d+/signed-preview-url`),
    {
      200: z.strictObject({ sandboxId: z.string(), port: z.number(), token: z.string(), url: z.string() }),
    },
    { query: z.strictObject({ expiresInSeconds: z.string().regex(/^\d+$/).optional() }) },
  ),
  toolbox("createSession", "POST", toolboxPath(""), { 201: null }, { body: z.strictObject({ sessionId: z.string() }) }),
  toolbox("deleteSession", "DELETE", toolboxPath(`/${ID}`), { 204: null }),
  toolbox(
    "executeSessionCommand",
    "POST",
    toolboxPath(`/${ID}/exec`),
    { 200: executeResponse, 202: executeResponse },
    {
      body: z.strictObject({
        command: z.string(),
        async: z.boolean().optional(),
        runAsync: z.boolean().optional(),
        suppressInputEcho: z.boolean().optional(),
      }),
    },
  ),
  toolbox("getSessionCommand", "GET", toolboxPath(`/${ID}/command/${ID}`), { 200: commandResponse }),
  toolbox(
    "getSessionCommandLogs",
    "GET",
    toolboxPath(`/${ID}/command/${ID}/logs`),
    { 200: logsResponse, 101: null },
    {
      query: z.strictObject({ follow: z.enum(["true", "false"]).optional() }),
    },
  ),
  toolbox(
    "sendInput",
    "POST",
    toolboxPath(`/${ID}/command/${ID}/input`),
    { 204: null },
    {
      body: z.strictObject({ data: z.string() }),
    },
  ),
  {
    name: "uploadFiles",
    method: "POST",
    path: new RegExp(`^/toolbox/${ID}/files/bulk-upload$`),
    source: `${TOOLBOX} src/api/file-system-api.js uploadFiles (multipart, not checked as JSON)`,
    query: noQuery,
    responses: { ...TOOLBOX_FAILURES, 200: null },
  },
  {
    name: "downloadFiles",
    method: "POST",
    path: new RegExp(`^/toolbox/${ID}/files/bulk-download$`),
    source: `${TOOLBOX} src/api/file-system-api.js downloadFiles; src/models/files-download-request.d.ts`,
    query: noQuery,
    body: z.strictObject({ paths: z.array(z.string()) }),
    responses: { ...TOOLBOX_FAILURES, 200: null },
  },
];
