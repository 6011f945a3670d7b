// E2B as its published sources define it, as the operations an emulator of
// the service is held to (ServiceRecorder): the control plane of
// e2b-dev/infra spec/openapi.yml (and, for the `/v2/sandboxes` paths the SDK
// the provider pins calls but that spec lacks, the types e2b 2.51.0 generated
// from a newer one), and envd, the daemon in every sandbox: envd.yaml's
// `/health` and `/files`, and the Connect RPCs of process.proto and
// filesystem.proto. Statuses the definitions leave out but the server's
// handlers answer are added with the handler named beside them.
import type { ServiceOperation } from "@agent-computer/testing/emulator";
import { z } from "zod";
import {
  apiError,
  buildStatusQuery,
  closeStdinRequest,
  connectError,
  connectRequest,
  connectSandboxV1,
  connectSandboxV2,
  emptyMessage,
  entryInfo,
  envdError,
  filesQuery,
  filesystemRequests,
  listedSandbox,
  listRequest,
  listResponse,
  listSandboxesQuery,
  newSandboxV1,
  newSandboxV2,
  processStream,
  SANDBOX_ID_PARAMETER,
  sandbox,
  sandboxDetail,
  sandboxNotFound,
  sandboxPauseRequest,
  sandboxTimeoutRequest,
  sendInputRequest,
  sendSignalRequest,
  startRequest,
  streamInputRequest,
  templateBuildInfo,
  templateBuildRequestV3,
  templateBuildStartV2,
  templateRequestResponseV3,
  updateRequest,
} from "./e2b-schemas.js";

export * from "./e2b-schemas.js";

const SPEC = "e2b-dev/infra spec/openapi.yml";
const SDK_TYPES = "e2b 2.51.0 dist/index.d.ts";
const ENVD = "e2b-dev/infra packages/envd/spec/envd.yaml";
const PROCESS = "e2b-dev/infra packages/envd/spec/process/process.proto";
const FILESYSTEM = "e2b-dev/infra packages/envd/spec/filesystem/filesystem.proto";

const sandboxPath = (prefix: string, rest = "") => new RegExp(`^${prefix}/sandboxes/${SANDBOX_ID_PARAMETER}${rest}$`);
const noQuery = z.strictObject({});

/** The error body at each of these statuses. */
function failures(schema: z.ZodType, ...statuses: number[]): Record<number, z.ZodType> {
  return Object.fromEntries(statuses.map((status) => [status, schema]));
}

// securitySchemes.ApiKeyAuth: the key in the `X-API-Key` header (header names
// are case-insensitive; the SDK sends X-API-KEY). The spec's other schemes
// (bearer access tokens, admin keys) are not what an SDK client uses.
const apiKey = z.string().min(1);
const withKey = z.looseObject({ "x-api-key": apiKey });
/** A JSON request body (the spec's requestBody content is application/json only). */
const withKeyAndJson = z.looseObject({
  "x-api-key": apiKey,
  "content-type": z.string().regex(/^application\/json\b/i, "must be application/json"),
});

/**
 * Statuses every sandbox-path operation may answer beyond its listed ones:
 * 400 for an id ShortID refuses (infra packages/api/internal/utils/split.go,
 * called by each handler before its work).
 */
const badId = failures(apiError, 400);

/**
 * The create handler answers 404 for an unknown template and 403 for one of
 * another team (infra packages/api/internal/cache/templates/errors.go), which
 * neither definition lists.
 */
const templateLookup = failures(apiError, 403, 404);

export const E2B_CONTROL_PLANE_OPERATIONS: readonly ServiceOperation[] = [
  {
    name: "postSandboxesV2",
    method: "POST",
    path: /^\/v2\/sandboxes$/,
    source: `${SDK_TYPES} paths["/v2/sandboxes"].post (NewSandboxV2 -> Sandbox)`,
    headers: withKeyAndJson,
    query: noQuery,
    body: newSandboxV2,
    responses: { 201: sandbox, ...failures(apiError, 400, 401, 429, 500, 503, 504), ...templateLookup },
  },
  {
    name: "postSandboxes",
    method: "POST",
    path: /^\/sandboxes$/,
    source: `${SPEC} POST /sandboxes (NewSandbox -> Sandbox); 429 from ${SDK_TYPES}`,
    headers: withKeyAndJson,
    query: noQuery,
    body: newSandboxV1,
    responses: { 201: sandbox, ...failures(apiError, 400, 401, 429, 500, 503, 504), ...templateLookup },
  },
  {
    name: "getSandboxesV2",
    method: "GET",
    path: /^\/v2\/sandboxes$/,
    source: `${SPEC} GET /v2/sandboxes (ListedSandbox[], X-Next-Token, X-Total-Running); 429 from ${SDK_TYPES}`,
    headers: withKey,
    query: listSandboxesQuery,
    responses: { 200: z.array(listedSandbox), ...failures(apiError, 400, 401, 429, 500) },
  },
  {
    name: "getSandbox",
    method: "GET",
    path: sandboxPath(""),
    source: `${SPEC} GET /sandboxes/{sandboxID} (SandboxDetail); 429 from ${SDK_TYPES}`,
    headers: withKey,
    query: noQuery,
    responses: { 200: sandboxDetail, ...failures(apiError, 401, 404, 429, 500), ...badId },
  },
  {
    name: "deleteSandbox",
    method: "DELETE",
    path: sandboxPath(""),
    source: `${SPEC} DELETE /sandboxes/{sandboxID}; 429 from ${SDK_TYPES}`,
    headers: withKey,
    query: noQuery,
    responses: { 204: null, ...failures(apiError, 401, 404, 429, 500), ...badId },
  },
  {
    name: "postSandboxPause",
    method: "POST",
    path: sandboxPath("", "/pause"),
    source: `${SPEC} POST /sandboxes/{sandboxID}/pause (SandboxPauseRequest, optional); 429, 503 from ${SDK_TYPES}`,
    headers: withKey,
    query: noQuery,
    body: sandboxPauseRequest.optional(),
    responses: { 204: null, ...failures(apiError, 401, 404, 409, 429, 500, 503), ...badId },
  },
  {
    name: "postSandboxConnectV2",
    method: "POST",
    path: sandboxPath("/v2", "/connect"),
    source: `${SDK_TYPES} paths["/v2/sandboxes/{sandboxID}/connect"].post (ConnectSandboxV2, optional -> Sandbox)`,
    headers: withKey,
    query: noQuery,
    body: connectSandboxV2.optional(),
    // 200: it was running; 201: it was resumed.
    responses: { 200: sandbox, 201: sandbox, ...failures(apiError, 400, 401, 404, 409, 429, 500, 503, 504) },
  },
  {
    name: "postSandboxConnect",
    method: "POST",
    path: sandboxPath("", "/connect"),
    source: `${SPEC} POST /sandboxes/{sandboxID}/connect (ConnectSandbox -> Sandbox); 429 from ${SDK_TYPES}`,
    headers: withKeyAndJson,
    query: noQuery,
    body: connectSandboxV1,
    responses: { 200: sandbox, 201: sandbox, ...failures(apiError, 400, 401, 404, 409, 429, 500, 503, 504) },
  },
  {
    name: "postSandboxTimeout",
    method: "POST",
    path: sandboxPath("", "/timeout"),
    source: `${SPEC} POST /sandboxes/{sandboxID}/timeout (SandboxTimeoutRequest); 429 from ${SDK_TYPES}`,
    headers: withKeyAndJson,
    query: noQuery,
    body: sandboxTimeoutRequest,
    // Not listed: KeepAliveFor answers 409 while the sandbox changes state and 400
    // "Max instance length exceeded" (infra packages/api/internal/orchestrator/keep_alive.go).
    responses: { 204: null, ...failures(apiError, 400, 401, 404, 409, 429, 500) },
  },
  {
    name: "postTemplatesV3",
    method: "POST",
    path: /^\/v3\/templates$/,
    source: `${SPEC} POST /v3/templates (TemplateBuildRequestV3 -> TemplateRequestResponseV3); 409, 429 from ${SDK_TYPES}`,
    headers: withKeyAndJson,
    query: noQuery,
    body: templateBuildRequestV3,
    responses: { 202: templateRequestResponseV3, ...failures(apiError, 400, 401, 403, 409, 429, 500) },
  },
  {
    name: "postTemplatesTemplateIDBuildsBuildIDV2",
    method: "POST",
    path: /^\/v2\/templates\/[^/]+\/builds\/[^/]+$/,
    source: `${SPEC} POST /v2/templates/{templateID}/builds/{buildID} (TemplateBuildStartV2); 400, 429 from ${SDK_TYPES}`,
    headers: withKeyAndJson,
    query: noQuery,
    body: templateBuildStartV2,
    responses: { 202: null, ...failures(apiError, 400, 401, 429, 500) },
  },
  {
    name: "getTemplatesTemplateIDBuildsBuildIDStatus",
    method: "GET",
    path: /^\/templates\/[^/]+\/builds\/[^/]+\/status$/,
    source: `${SPEC} GET /templates/{templateID}/builds/{buildID}/status (TemplateBuildInfo); 429 from ${SDK_TYPES}`,
    headers: withKey,
    query: buildStatusQuery,
    responses: { 200: templateBuildInfo, ...failures(apiError, 401, 404, 429, 500) },
  },
];

// ---------------------------------------------------------------- envd

/**
 * envd.yaml securitySchemes.AccessTokenAuth: `X-Access-Token`, optional in
 * the definition (`security: [AccessTokenAuth, {}]`); required by envd's
 * middleware when the sandbox has a token, on every path but GET /health,
 * GET and POST /files and POST /init (infra packages/envd/internal/api/auth.go
 * authExcludedPaths). The user of a process or filesystem call is Basic auth
 * with an empty password (infra packages/envd/internal/permissions/authenticate.go).
 */
const envdAuth = {
  "x-access-token": z.string().optional(),
  authorization: z
    .string()
    .regex(/^Basic [A-Za-z0-9+/]*={0,2}$/, "envd reads the user from Basic auth only")
    .optional(),
};

/** The edge answers 502 for a sandbox it cannot route to (proxy/template/sandbox_not_found.go). */
const edge = { 502: sandboxNotFound };

/** 401 from envd's token middleware (an envd Error, api/auth.go) or from authn's unknown user (a Connect error). */
const refused = { 401: z.union([envdError, connectError]) };

/**
 * Connect protocol requests (connectrpc.com/docs/protocol): unary ones are
 * `application/json` with `Connect-Protocol-Version: 1`; streams are
 * `application/connect+json` envelopes. `Connect-Timeout-Ms` is at most 10
 * digits; envd kills the process at it (start.go determineTimeoutFromHeader).
 * `Keepalive-Ping-Interval` is seconds; envd takes anything it cannot parse
 * as 90 (permissions/keepalive.go), so it is not checked.
 */
const unaryHeaders = z.looseObject({
  ...envdAuth,
  "content-type": z.string().regex(/^application\/json\b/i, "a unary Connect call is application/json"),
  "connect-protocol-version": z.literal("1").optional(),
  "connect-timeout-ms": z
    .string()
    .regex(/^\d{1,10}$/)
    .optional(),
});
const streamHeaders = z.looseObject({
  ...envdAuth,
  "content-type": z.string().regex(/^application\/connect\+json\b/i, "a Connect stream is application/connect+json"),
  "connect-protocol-version": z.literal("1").optional(),
  "connect-timeout-ms": z
    .string()
    .regex(/^\d{1,10}$/)
    .optional(),
  "keepalive-ping-interval": z.string().optional(),
});

/** A unary RPC: its message, or a Connect error at the status its code maps to. */
function unary(service: "process.Process" | "filesystem.Filesystem", rpc: string, body: z.ZodType): ServiceOperation {
  return {
    name: `${service}/${rpc}`,
    method: "POST",
    path: new RegExp(`^/${service.replace(".", "\\.")}/${rpc}$`),
    source: `${service === "process.Process" ? PROCESS : FILESYSTEM} rpc ${rpc}`,
    headers: unaryHeaders,
    query: noQuery,
    body,
    responses: {
      200: rpc === "List" ? listResponse : emptyMessage,
      ...failures(connectError, 400, 404, 500, 501),
      ...refused,
      ...edge,
    },
  };
}

/**
 * A server-streaming RPC: HTTP 200 whatever happens (errors travel in the
 * end-of-stream message, connect-go's streaming protocol), the request's one
 * message checked as its body.
 */
function serverStream(service: string, rpc: string, body: z.ZodType, answer: z.ZodType | null): ServiceOperation {
  return {
    name: `${service}/${rpc}`,
    method: "POST",
    path: new RegExp(`^/${service.replace(".", "\\.")}/${rpc}$`),
    source: `${service === "process.Process" ? PROCESS : FILESYSTEM} rpc ${rpc} (stream)`,
    headers: streamHeaders,
    query: noQuery,
    body,
    responses: { 200: answer, ...refused, ...edge },
  };
}

export const ENVD_OPERATIONS: readonly ServiceOperation[] = [
  {
    name: "envd.getHealth",
    method: "GET",
    path: /^\/health$/,
    source: `${ENVD} GET /health`,
    query: noQuery,
    responses: { 204: null, ...edge },
  },
  {
    name: "envd.getFiles",
    method: "GET",
    path: /^\/files$/,
    source: `${ENVD} GET /files (FilePath, User, Signature, SignatureExpiration)`,
    headers: z.looseObject({ ...envdAuth, "accept-encoding": z.string().optional() }),
    query: filesQuery,
    // DownloadSuccess: the raw bytes, not checked.
    responses: { 200: null, ...failures(envdError, 400, 401, 404, 406, 500), ...edge },
  },
  {
    name: "envd.postFiles",
    method: "POST",
    path: /^\/files$/,
    source: `${ENVD} POST /files (requestBodies.File -> UploadSuccess)`,
    headers: z.looseObject({
      ...envdAuth,
      // requestBodies.File: multipart/form-data or application/octet-stream.
      "content-type": z
        .string()
        .regex(
          /^(multipart\/form-data|application\/octet-stream)\b/i,
          "multipart/form-data or application/octet-stream",
        ),
      "content-encoding": z.enum(["gzip", "identity"]).optional(),
    }),
    query: filesQuery,
    responses: { 200: z.array(entryInfo), ...failures(envdError, 400, 401, 500, 507), ...edge },
  },
  serverStream("process.Process", "Start", startRequest, processStream),
  serverStream("process.Process", "Connect", connectRequest, processStream),
  unary("process.Process", "List", listRequest),
  unary("process.Process", "Update", updateRequest),
  unary("process.Process", "SendInput", sendInputRequest),
  unary("process.Process", "SendSignal", sendSignalRequest),
  unary("process.Process", "CloseStdin", closeStdinRequest),
  // A client stream: its first message is checked; the answer is enveloped too.
  serverStream("process.Process", "StreamInput", streamInputRequest, null),
  unary("filesystem.Filesystem", "Stat", filesystemRequests.Stat),
  unary("filesystem.Filesystem", "MakeDir", filesystemRequests.MakeDir),
  unary("filesystem.Filesystem", "Move", filesystemRequests.Move),
  unary("filesystem.Filesystem", "ListDir", filesystemRequests.ListDir),
  unary("filesystem.Filesystem", "Remove", filesystemRequests.Remove),
  unary("filesystem.Filesystem", "CreateWatcher", filesystemRequests.CreateWatcher),
  unary("filesystem.Filesystem", "GetWatcherEvents", filesystemRequests.GetWatcherEvents),
  unary("filesystem.Filesystem", "RemoveWatcher", filesystemRequests.RemoveWatcher),
  serverStream("filesystem.Filesystem", "WatchDir", filesystemRequests.WatchDir, null),
];

/** Everything an E2B emulator serves: the control plane, and envd behind the edge. */
export const E2B_OPERATIONS: readonly ServiceOperation[] = [...E2B_CONTROL_PLANE_OPERATIONS, ...ENVD_OPERATIONS];
