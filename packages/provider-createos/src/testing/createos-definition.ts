// The CreateOS sandbox API's operations, paths relative to the service's
// base (`https://api.sb.createos.sh`), as the official SDKs send them:
// `TS` is @nodeops-createos/sandbox 0.7.1 (dist/client.js, dist/sandbox.js),
// `Go` is NodeOps-app/createos-go-sdk (sandbox/processes.go for managed
// processes, which the TS SDK does not model). The emulator holds every
// request and answer to these (ServiceRecorder).
import type { ServiceOperation } from "@agent-computer/testing/emulator";
import { z } from "zod";
import {
  connectQuery,
  createSandboxRequest,
  createSandboxResponse,
  deleteProcessQuery,
  destroyedResponse,
  egressView,
  errorEnvelope,
  execRequest,
  execResponse,
  failEnvelope,
  filePathQuery,
  fileWritten,
  getTemplateQuery,
  listSandboxesQuery,
  managedProcess,
  managedProcessList,
  noQuery,
  okResponse,
  pageQuery,
  paginated,
  patchSandboxRequest,
  processCreateRequest,
  processInputRequest,
  processInputResponse,
  processSignalRequest,
  sandboxView,
  setEgressRequest,
  success,
  templateCreateRequest,
  templateView,
  waitQuery,
} from "./createos-schemas.js";

export * from "./createos-schemas.js";

/**
 * Every call but the health probes carries the key (http.js: the
 * `X-Api-Key` header, config.js's CREATEOS_SANDBOX_API_KEY).
 */
const authorized = z.looseObject({ "x-api-key": z.string().min(1) });

/** 4xx answers are JSend `fail`, 5xx JSend `error` (types.ts FailEnvelope/ErrorEnvelope; errors.js errorFromResponse). */
function failures(...statuses: number[]): Record<number, z.ZodType> {
  return Object.fromEntries(statuses.map((status) => [status, status >= 500 ? errorEnvelope : failEnvelope]));
}

/** What any call may answer: a refused key, too many calls, a failed server (errors.js's classes). */
const always = failures(401, 403, 429, 500, 503);

const ID = "[A-Za-z0-9_-]+";
const sandboxPath = (rest = "") => new RegExp(`^/v1/sandboxes/${ID}${rest}$`);
const processPath = (rest = "") => sandboxPath(`/processes/${ID}${rest}`);

/** A raw file body (sandbox.js SandboxFiles.download answers bytes, not JSON). */
const rawBytes = null;

export const CREATEOS_OPERATIONS: readonly ServiceOperation[] = [
  {
    name: "healthz",
    method: "GET",
    path: /^\/healthz$/,
    source: "TS client.js healthz (unauthenticated, `auth: false`); types.ts HealthzResponse",
    query: noQuery,
    responses: { 200: success(z.strictObject({ up: z.boolean() })), ...failures(500, 503) },
  },
  {
    name: "createSandbox",
    method: "POST",
    path: /^\/v1\/sandboxes$/,
    source:
      "TS client.js createSandbox (synchronous: 200 once the VM's agent answers); types.ts CreateSandboxRequest/Response",
    headers: authorized,
    query: noQuery,
    body: createSandboxRequest,
    // 402: COMPATIBILITY.md "Credit gating"; 409: a name already taken (types.ts CreateSandboxRequest.name "unique per user").
    responses: { 200: success(createSandboxResponse), ...failures(400, 402, 409, 422), ...always },
  },
  {
    name: "listSandboxes",
    method: "GET",
    path: /^\/v1\/sandboxes$/,
    source: "TS client.js listSandboxes → http.js fetchAllPages; COMPATIBILITY.md paginated envelope",
    headers: authorized,
    query: listSandboxesQuery,
    responses: { 200: success(paginated(sandboxView)), ...failures(400), ...always },
  },
  {
    name: "getSandbox",
    method: "GET",
    path: sandboxPath(),
    source: "TS client.js getSandbox, sandbox.js refresh; types.ts SandboxView",
    headers: authorized,
    query: noQuery,
    responses: { 200: success(sandboxView), ...failures(404), ...always },
  },
  {
    name: "patchSandbox",
    method: "PATCH",
    path: sandboxPath(),
    source: "TS sandbox.js setIngress/setAutoPause; types.ts PatchSandboxRequest",
    headers: authorized,
    query: noQuery,
    body: patchSandboxRequest,
    responses: { 200: success(sandboxView), ...failures(400, 404, 409), ...always },
  },
  {
    name: "getEgress",
    method: "GET",
    path: sandboxPath("/egress"),
    source:
      "TS sandbox.js getEgress; types.ts EgressView; REST page Sandbox/REST-API/Egress (404: not found or not owned)",
    headers: authorized,
    query: noQuery,
    responses: { 200: success(egressView), ...failures(404), ...always },
  },
  {
    name: "setEgress",
    method: "PUT",
    path: sandboxPath("/egress"),
    source:
      "TS sandbox.js setEgress (ValidationError when a rule is malformed); types.ts SetEgressRequest/EgressView; COMPATIBILITY.md (404 for a sandbox not owned)",
    headers: authorized,
    query: noQuery,
    body: setEgressRequest,
    responses: { 200: success(egressView), ...failures(400, 404, 422), ...always },
  },
  {
    name: "destroySandbox",
    method: "DELETE",
    path: sandboxPath(),
    source: "TS sandbox.js destroy; types.ts DestroyedResponse",
    headers: authorized,
    query: noQuery,
    responses: { 200: success(destroyedResponse), ...failures(404, 409), ...always },
  },
  {
    name: "pauseSandbox",
    method: "POST",
    path: sandboxPath("/pause"),
    source: "TS sandbox.js pause (answers the SandboxView); docs/explanation/lifecycle.md",
    headers: authorized,
    query: noQuery,
    // 400/409: not in a pausable state (errors.js maps both to ValidationError).
    responses: { 200: success(sandboxView), ...failures(400, 404, 409), ...always },
  },
  {
    name: "resumeSandbox",
    method: "POST",
    path: sandboxPath("/resume"),
    source: 'TS sandbox.js resume ("@throws ValidationError when the sandbox is not in a resumable state")',
    headers: authorized,
    query: noQuery,
    responses: { 200: success(sandboxView), ...failures(400, 402, 404, 409), ...always },
  },
  {
    name: "exec",
    method: "POST",
    path: sandboxPath("/exec"),
    source: "TS sandbox.js runCommand; types.ts ExecRequest/ExecResponse (no shell, stdin and env dropped)",
    headers: authorized,
    query: noQuery,
    body: execRequest,
    responses: { 200: success(execResponse), ...failures(400, 404, 409), ...always },
  },
  {
    name: "uploadFile",
    method: "PUT",
    path: sandboxPath("/files"),
    source: "TS sandbox.js SandboxFiles.upload (raw bytes, application/octet-stream); Go sandbox/files.go Upload",
    headers: authorized,
    query: filePathQuery,
    responses: { 200: fileWritten, ...failures(400, 404, 409), ...always },
  },
  {
    name: "downloadFile",
    method: "GET",
    path: sandboxPath("/files"),
    source: "TS sandbox.js SandboxFiles.download (raw bytes); Go sandbox/files.go Download",
    headers: authorized,
    query: filePathQuery,
    responses: { 200: rawBytes, ...failures(400, 404, 409), ...always },
  },
  {
    name: "createProcess",
    method: "POST",
    path: sandboxPath("/processes"),
    source: "Go sandbox/processes.go Create; structs ManagedProcessCreateRequest/ManagedProcess",
    headers: authorized,
    query: noQuery,
    body: processCreateRequest,
    responses: { 200: success(managedProcess), ...failures(400, 404, 409), ...always },
  },
  {
    name: "listProcesses",
    method: "GET",
    path: sandboxPath("/processes"),
    source: "Go sandbox/processes.go List; structs ManagedProcessListResponse",
    headers: authorized,
    query: noQuery,
    responses: { 200: success(managedProcessList), ...failures(404, 409), ...always },
  },
  {
    name: "getProcess",
    method: "GET",
    path: processPath(),
    source: "Go sandbox/processes.go Get",
    headers: authorized,
    query: noQuery,
    responses: { 200: success(managedProcess), ...failures(404, 409), ...always },
  },
  {
    name: "deleteProcess",
    method: "DELETE",
    path: processPath(),
    source: "Go sandbox/processes.go Delete (terminates the process tree; `grace_ms`); COMPATIBILITY.md",
    headers: authorized,
    query: deleteProcessQuery,
    responses: { 200: success(managedProcess), ...failures(404, 409), ...always },
  },
  {
    name: "connectProcess",
    method: "GET",
    path: processPath("/connect"),
    source: "Go sandbox/processes.go Connect (NDJSON of ManagedProcessConnectFrame, replayable `after` a sequence)",
    headers: authorized,
    query: connectQuery,
    // The 200 body is an NDJSON stream: each frame is checked as it is sent (processConnectFrame).
    responses: { 200: null, ...failures(404, 409), ...always },
  },
  {
    name: "processInput",
    method: "POST",
    path: processPath("/input"),
    source: "Go sandbox/processes.go InputBytes; structs ManagedProcessInputRequest/Response",
    headers: authorized,
    query: noQuery,
    body: processInputRequest,
    responses: { 200: success(processInputResponse), ...failures(400, 404, 409), ...always },
  },
  {
    name: "closeProcessStdin",
    method: "POST",
    path: processPath("/stdin/close"),
    source: "Go sandbox/processes.go CloseStandardInput (OKResponse)",
    headers: authorized,
    query: noQuery,
    responses: { 200: success(okResponse), ...failures(404, 409), ...always },
  },
  {
    name: "signalProcess",
    method: "POST",
    path: processPath("/signal"),
    source: "Go sandbox/processes.go Signal; enums.go ManagedProcessSignal",
    headers: authorized,
    query: noQuery,
    body: processSignalRequest,
    responses: { 200: success(okResponse), ...failures(400, 404, 409), ...always },
  },
  {
    name: "waitProcess",
    method: "GET",
    path: processPath("/wait"),
    source: "Go sandbox/processes.go Wait (long poll; `scope`, `timeout_ms`)",
    headers: authorized,
    query: waitQuery,
    responses: { 200: success(managedProcess), ...failures(404, 408, 409), ...always },
  },
  {
    name: "listTemplates",
    method: "GET",
    path: /^\/v1\/templates$/,
    source: "TS client.js TemplatesApi.list → http.js fetchAllPages (legacyKey `templates`)",
    headers: authorized,
    query: pageQuery,
    responses: { 200: success(paginated(templateView)), ...always },
  },
  {
    name: "createTemplate",
    method: "POST",
    path: /^\/v1\/templates$/,
    source: "TS client.js TemplatesApi.create; types.ts TemplateCreateRequest/TemplateView",
    headers: authorized,
    query: noQuery,
    body: templateCreateRequest,
    // 402: COMPATIBILITY.md "Credit gating" (template create); 409: a name taken.
    responses: { 200: success(templateView), ...failures(400, 402, 409, 422), ...always },
  },
  {
    name: "getTemplate",
    method: "GET",
    path: new RegExp(`^/v1/templates/${ID}$`),
    source: "TS client.js TemplatesApi.get; types.ts TemplateView",
    headers: authorized,
    query: getTemplateQuery,
    responses: { 200: success(templateView), ...failures(404), ...always },
  },
];
