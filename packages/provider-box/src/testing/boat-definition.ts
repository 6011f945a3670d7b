// The Boat sandbox API (formerly Box) as its published definition states it:
// boat-v1.yaml in OpenAgentsInc/openagents (crates/boat/schema), paths taken
// relative to its server, https://boat.dev/api/v1. An emulator of the service
// holds every request and answer to these (ServiceRecorder). Statuses the YAML
// leaves out but the service was captured answering (the redacted captures in
// crates/boat/fixtures/observed) are added with the capture named beside them.
import type { ServiceOperation } from "@agent-computer/testing/emulator";
import { z } from "zod";
import {
  BOAT_DELETION_OPERATION_ID_PATTERN,
  BOAT_SANDBOX_ID_PATTERN,
  BOAT_SNAPSHOT_NAME_PATTERN,
  boatCancelledSandbox,
  boatCommandRequest,
  boatCommandResponse,
  boatCommandStarted,
  boatCommandStatus,
  boatCommandStreamFrame,
  boatCreateSandboxRequest,
  boatCreateSandboxResponse,
  boatDeletionOperationResponse,
  boatErrorEnvelope,
  boatFilePath,
  boatFileRead,
  boatFileWriteRequest,
  boatFileWritten,
  boatHostPortRequest,
  boatHostPortResponse,
  boatNamedSnapshotDeleted,
  boatNamedSnapshotInfo,
  boatNamedSnapshotList,
  boatNamedSnapshotSaveRequest,
  boatNamedSnapshotSaving,
  boatResumeRequest,
  boatSandbox,
  boatSandboxActionResponse,
  boatSandboxInfoResponse,
  boatSandboxListResponse,
  boatStopRequest,
  boatUpdateSandboxRequest,
  checkedBy,
  integerString,
} from "./boat-schemas.js";

export * from "./boat-schemas.js";

const SOURCE = "boat-v1.yaml";

/** The bare patterns, to build path expressions from. */
const SANDBOX = BOAT_SANDBOX_ID_PATTERN.source.slice(1, -1);
const DELETION = BOAT_DELETION_OPERATION_ID_PATTERN.source.slice(1, -1);
/** The name path parameter is a bare string in the YAML; the pattern is NamedSnapshot.name's. */
const SNAPSHOT_NAME = BOAT_SNAPSHOT_NAME_PATTERN.source.slice(1, -1);

const sandboxPath = (rest = "") => new RegExp(`^/sandboxes/${SANDBOX}${rest}$`);

// Every operation is under the global BoatBearerAuth scheme (`security`): an
// HTTP bearer token. The scheme name is case-insensitive in HTTP; the YAML's
// `boat_...` token form is prose about key naming, not checked here.
const authorization = z.string().regex(/^bearer \S+$/i, "must be `Bearer <token>`");
const authorized = z.looseObject({ authorization });
/** OrgHeader: an optional billing wallet, on create and sandboxes. */
const orgHeader = z.string().optional();

/** Operations without query parameters refuse any. */
const noQuery = z.strictObject({});

/** The error envelope at each of these statuses. */
function failures(...statuses: number[]): Record<number, z.ZodType> {
  return Object.fromEntries(statuses.map((status) => [status, boatErrorEnvelope]));
}

/** A cancelled sandbox may come as the short form (boatCancelledSandbox). */
const isCancelled = (value: unknown) =>
  typeof value === "object" && value !== null && (value as { state?: unknown }).state === "cancelled";

/** Create, stop and resume take an optional body (`requestBody.required: false`). */
const optionalBody = <T extends z.ZodType>(schema: T) => schema.optional();

export const BOAT_OPERATIONS: readonly ServiceOperation[] = [
  {
    name: "create",
    method: "POST",
    path: /^\/sandboxes$/,
    source: `${SOURCE} op:create (POST /sandboxes)`,
    headers: z.looseObject({
      authorization,
      // parameters.IdempotencyKey: a retry with the same key and body finds the first sandbox for 24 h.
      "idempotency-key": z.string().max(255).optional(),
      "x-boat-org": orgHeader,
    }),
    query: z.strictObject({ org: z.string().optional() }),
    body: optionalBody(boatCreateSandboxRequest),
    responses: {
      202: boatCreateSandboxResponse,
      // 400 is not in the YAML's list, though CreateSandboxRequest's prose gives
      // 400 invalid_setup_script (and names invalid_env, unknown_environment
      // without a status); create.xlarge.json caught 400 machine_provider_required.
      ...failures(400, 401, 402, 409, 429, 503),
    },
  },
  {
    name: "sandboxes",
    method: "GET",
    path: /^\/sandboxes$/,
    source: `${SOURCE} op:sandboxes (GET /sandboxes)`,
    headers: z.looseObject({ authorization, "x-boat-org": orgHeader }),
    query: z.strictObject({
      org: z.string().optional(),
      limit: integerString(1, 200).optional(),
      cursor: z.string().optional(),
      sort: z.enum(["asc", "desc"]).optional(),
      // A comma-separated filter of states; the YAML types it as a bare string.
      state: z.string().optional(),
    }),
    responses: {
      200: boatSandboxListResponse,
      // Not in the YAML: the shared `limit` parameter out of range is answered
      // 400 invalid_limit (captured on listSnapshots in listSnapshots.badLimit.json).
      // A malformed cursor is not an error (sandboxes.badCursor.json: 200, first page).
      ...failures(400, 401),
    },
  },
  {
    name: "get",
    method: "GET",
    path: sandboxPath(),
    source: `${SOURCE} op:get (GET /sandboxes/{sandboxId})`,
    headers: authorized,
    query: noQuery,
    responses: {
      200: boatSandboxInfoResponse.extend({
        sandbox: checkedBy((value) =>
          isCancelled(value) ? z.union([boatSandbox, boatCancelledSandbox]) : boatSandbox,
        ),
      }),
      ...failures(401, 404),
    },
  },
  {
    name: "update",
    method: "PATCH",
    path: sandboxPath(),
    source: `${SOURCE} op:update (PATCH /sandboxes/{sandboxId})`,
    headers: authorized,
    query: noQuery,
    body: boatUpdateSandboxRequest,
    responses: {
      200: boatSandboxInfoResponse,
      // 502 gateway_error: UpdateSandboxRequest.subdomain's prose (rename saved, routes not yet live; retry).
      ...failures(400, 401, 404, 502),
    },
  },
  {
    name: "deleteSandbox",
    method: "DELETE",
    path: sandboxPath(),
    source: `${SOURCE} op:deleteSandbox (DELETE /sandboxes/{sandboxId})`,
    // parameters.ConfirmDelete: the value must equal the sandbox id, which a
    // schema cannot see; it is only required here, non-empty. A missing or
    // wrong one is answered 409 delete_confirmation_required (deleteSandbox.mismatch.json).
    headers: z.looseObject({ authorization, "x-ascii-confirm-delete": z.string().min(1) }),
    query: noQuery,
    responses: { 202: boatDeletionOperationResponse, ...failures(401, 403, 404, 409) },
  },
  {
    name: "stop",
    method: "POST",
    path: sandboxPath("/stop"),
    source: `${SOURCE} op:stop (POST /sandboxes/{sandboxId}/stop)`,
    headers: authorized,
    query: noQuery,
    body: optionalBody(boatStopRequest),
    // 400 is listed; the service uses it for stop_failed on an archived sandbox (stop.archived.json).
    responses: { 202: boatSandboxActionResponse, ...failures(400, 401, 404) },
  },
  {
    name: "resume",
    method: "POST",
    path: sandboxPath("/resume"),
    source: `${SOURCE} op:resume (POST /sandboxes/{sandboxId}/resume)`,
    headers: authorized,
    query: noQuery,
    body: optionalBody(boatResumeRequest),
    responses: { 202: boatSandboxActionResponse, ...failures(401, 402, 404, 409, 429, 503) },
  },
  {
    name: "getDeletionOperation",
    method: "GET",
    path: new RegExp(`^/deletion-operations/${DELETION}$`),
    source: `${SOURCE} op:getDeletionOperation (GET /deletion-operations/{operationId})`,
    headers: authorized,
    query: noQuery,
    responses: { 200: boatDeletionOperationResponse, ...failures(401, 404) },
  },
  {
    name: "command",
    method: "POST",
    path: sandboxPath("/commands"),
    source: `${SOURCE} op:command (POST /sandboxes/{sandboxId}/commands)`,
    headers: authorized,
    query: noQuery,
    body: boatCommandRequest,
    responses: {
      // A finished command, a detached start, or (stream: true) the NDJSON
      // frames, which an emulator hands over parsed, as an array.
      200: checkedBy((value) =>
        Array.isArray(value)
          ? z.array(boatCommandStreamFrame)
          : z.discriminatedUnion("type", [boatCommandResponse, boatCommandStarted]),
      ),
      // 409 covers boat_starting, sandbox_not_ready and machine_not_running
      // (command.archived.json); 502 boat_direct_failed is in the operation's
      // prose only: the command may already be running, never retried.
      ...failures(400, 401, 404, 409, 502),
    },
  },
  {
    name: "commandStatus",
    method: "GET",
    path: sandboxPath("/commands/[1-9][0-9]*"),
    source: `${SOURCE} op:commandStatus (GET /sandboxes/{sandboxId}/commands/{processId})`,
    headers: authorized,
    query: z.strictObject({ tailBytes: integerString(1, 8_388_608).optional() }),
    responses: {
      200: boatCommandStatus,
      // 409 machine_not_running: not in the YAML, captured in commandStatus.archived.json.
      ...failures(400, 401, 404, 409),
    },
  },
  {
    name: "readFile",
    method: "GET",
    path: sandboxPath("/files"),
    source: `${SOURCE} op:readFile (GET /sandboxes/{sandboxId}/files)`,
    headers: authorized,
    query: z.strictObject({ path: boatFilePath, encoding: z.enum(["utf8", "base64"]).optional() }),
    responses: {
      200: boatFileRead,
      // The YAML lists 400 only. 401: the global bearer scheme (unauthorized.json);
      // 404: an unknown sandbox, as on every other {sandboxId} route (get.404.json);
      // 409 machine_not_running: captured for writeFile on the same route (writeFile.archived.json).
      ...failures(400, 401, 404, 409),
    },
  },
  {
    name: "writeFile",
    method: "PUT",
    path: sandboxPath("/files"),
    source: `${SOURCE} op:writeFile (PUT /sandboxes/{sandboxId}/files)`,
    headers: authorized,
    query: noQuery,
    body: boatFileWriteRequest,
    responses: {
      200: boatFileWritten,
      // As readFile; 409 machine_not_running captured in writeFile.archived.json.
      ...failures(400, 401, 404, 409),
    },
  },
  {
    name: "hostPort",
    method: "POST",
    path: sandboxPath("/host"),
    source: `${SOURCE} op:hostPort (POST /sandboxes/{sandboxId}/host)`,
    headers: authorized,
    query: noQuery,
    body: boatHostPortRequest,
    // 400 is listed; a stopped machine is answered 400 machine_not_running (hostPort.archived.json).
    responses: { 200: boatHostPortResponse, ...failures(400, 401, 402, 404) },
  },
  {
    name: "saveNamedSnapshot",
    method: "POST",
    path: /^\/named-snapshots$/,
    source: `${SOURCE} op:saveNamedSnapshot (POST /named-snapshots)`,
    headers: authorized,
    query: noQuery,
    body: boatNamedSnapshotSaveRequest,
    // 409: named_snapshot_limit (10 kept) or save_in_progress.
    responses: { 202: boatNamedSnapshotSaving, ...failures(400, 401, 404, 409) },
  },
  {
    name: "listNamedSnapshots",
    method: "GET",
    path: /^\/named-snapshots$/,
    source: `${SOURCE} op:listNamedSnapshots (GET /named-snapshots)`,
    headers: authorized,
    query: noQuery,
    responses: { 200: boatNamedSnapshotList, ...failures(401) },
  },
  {
    name: "getNamedSnapshot",
    method: "GET",
    path: new RegExp(`^/named-snapshots/${SNAPSHOT_NAME}$`),
    source: `${SOURCE} op:getNamedSnapshot (GET /named-snapshots/{name})`,
    headers: authorized,
    query: noQuery,
    responses: { 200: boatNamedSnapshotInfo, ...failures(401, 404) },
  },
  {
    name: "deleteNamedSnapshot",
    method: "DELETE",
    path: new RegExp(`^/named-snapshots/${SNAPSHOT_NAME}$`),
    source: `${SOURCE} op:deleteNamedSnapshot (DELETE /named-snapshots/{name})`,
    headers: authorized,
    query: noQuery,
    // 409 save_in_progress: a save under the name is still running.
    responses: { 200: boatNamedSnapshotDeleted, ...failures(401, 404, 409) },
  },
];
