import type { ServiceOperation } from "@agent-computer/testing/emulator";
import { z } from "zod";
import { BOXD_METHODS } from "../boxd-definition.js";
import { readWireFields } from "../protobuf-wire.js";

/**
 * boxd's calls as the emulator holds them, each request and answer checked
 * (the emulator kit's ServiceRecorder, with `method` "POST" and the gRPC
 * path, as gRPC sends them). Sources, cited per operation:
 *   [vm]   discobox-ai/vm pkg/machine/boxd/internal/boxdapi: the wire-exact
 *          subset with field numbers and its comments; fakeapi_test.go, the
 *          public fake server, for answers and codes.
 *   [docs] docs.boxd.sh reference/grpc-api: status codes ("Errors"), the
 *          exchange, the streaming rpcs.
 * An answer's "status" is the gRPC status code (0 OK, 3 INVALID_ARGUMENT,
 * 5 NOT_FOUND, 6 ALREADY_EXISTS, 7 PERMISSION_DENIED, 9 FAILED_PRECONDITION, 16 UNAUTHENTICATED).
 */
const OK = 0;
const CANCELLED = 1;
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;
const PERMISSION_DENIED = 7;
const FAILED_PRECONDITION = 9;
const UNAUTHENTICATED = 16;

/** Every call may be refused for its token or its shape ([docs] "Errors": UNAUTHENTICATED, INVALID_ARGUMENT), */
// and any may meet the service unavailable (the status every gRPC server may answer; tests inject it).
const UNAVAILABLE = 14;
const COMMON = { [UNAUTHENTICATED]: null, [INVALID_ARGUMENT]: null, [UNAVAILABLE]: null } as const;

const vmId = z.string().min(1, "vm_id names the machine (its id or name)");
const byVm = z.looseObject({ vm_id: vmId });
const empty = z.looseObject({});

const vmAnswer = z.looseObject({ vm_id: z.string().min(1), name: z.string().min(1), status: z.string().min(1) });

function operation(
  name: string,
  body: z.ZodType,
  responses: Record<number, z.ZodType | null>,
  source: string,
): ServiceOperation {
  const method = BOXD_METHODS.get(name);
  if (!method) throw new Error(`the proto lacks ${name}`);
  return {
    name,
    method: "POST",
    path: new RegExp(`^${method.path}$`),
    source,
    body,
    responses: { ...COMMON, ...responses },
  };
}

export const BOXD_OPERATIONS: readonly ServiceOperation[] = [
  operation(
    "CreateVm",
    z.looseObject({ name: z.string(), image_ref: z.string(), org: z.string(), isolated: z.boolean() }),
    { [OK]: vmAnswer, [ALREADY_EXISTS]: null, [PERMISSION_DENIED]: null },
    "[vm] CreateVmRequest 1,2,7,8,9,12 / CreateVmResponse 1-7",
  ),
  operation(
    "CreateVmFromSnapshot",
    z.looseObject({ snapshot: z.string().min(1), name: z.string(), org: z.string() }),
    // FAILED_PRECONDITION for a snapshot not ready is the emulator's assumption (unpublished; README).
    {
      [OK]: vmAnswer,
      [NOT_FOUND]: null,
      [ALREADY_EXISTS]: null,
      [FAILED_PRECONDITION]: null,
      [PERMISSION_DENIED]: null,
    },
    "[vm] CreateVmFromSnapshotRequest 1-5; fakeapi_test.go CreateVmFromSnapshot (NOT_FOUND for a missing snapshot)",
  ),
  operation(
    "CreateSnapshot",
    z.looseObject({ vm: vmId, name: z.string().min(1, "a snapshot is saved under a name") }),
    {
      [OK]: z.looseObject({
        snapshot_id: z.string().min(1),
        name: z.string().min(1),
        version: z.number().int().positive(),
        status: z.literal("pending"),
      }),
      [NOT_FOUND]: null,
      [FAILED_PRECONDITION]: null,
    },
    "[vm] CreateSnapshotRequest 1,2 / CreateSnapshotResponse 1-4 (pending until stored); fakeapi_test.go CreateSnapshot (NOT_FOUND, FAILED_PRECONDITION unless running)",
  ),
  operation(
    "GetSnapshot",
    z.looseObject({ name: z.string().min(1), org: z.string() }),
    {
      [OK]: z.looseObject({
        snapshot: z.looseObject({ name: z.string().min(1), status: z.enum(["pending", "ready", "failed"]) }),
      }),
      [NOT_FOUND]: null,
      [PERMISSION_DENIED]: null,
    },
    "[vm] GetSnapshotRequest 1,2 / SnapshotInfo 1-4,7,9,10 (pending | ready | failed); fakeapi_test.go GetSnapshot (NOT_FOUND)",
  ),
  operation(
    "GetVm",
    byVm,
    { [OK]: vmAnswer, [NOT_FOUND]: null },
    "[vm] GetVm: NOT_FOUND for no matching machine, a destroyed one included",
  ),
  operation(
    "ListVms",
    empty,
    { [OK]: null },
    "[docs] rpc ListVms (its messages' fields unpublished in [vm]: answer not checked)",
  ),
  operation(
    "StartVm",
    byVm,
    { [OK]: empty, [NOT_FOUND]: null, [FAILED_PRECONDITION]: null },
    "[vm] fakeapi_test.go StartVm (FAILED_PRECONDITION unless stopped)",
  ),
  operation("StopVm", byVm, { [OK]: empty, [NOT_FOUND]: null }, "[vm] StopVm: cold stop, memory lost"),
  operation(
    "SuspendVm",
    byVm,
    { [OK]: empty, [NOT_FOUND]: null, [FAILED_PRECONDITION]: null },
    "[vm] fakeapi_test.go SuspendVm (running to suspended)",
  ),
  operation(
    "ResumeVm",
    byVm,
    { [OK]: empty, [NOT_FOUND]: null, [FAILED_PRECONDITION]: null },
    "[vm] fakeapi_test.go ResumeVm (suspended to running)",
  ),
  operation(
    "WakeVm",
    byVm,
    { [OK]: empty, [NOT_FOUND]: null, [FAILED_PRECONDITION]: null },
    "[vm] WakeVm (from hibernation)",
  ),
  operation("DestroyVm", byVm, { [OK]: empty, [NOT_FOUND]: null }, "[vm] fakeapi_test.go DestroyVm"),
  operation(
    "SetAutoSuspendTimeout",
    z.looseObject({ vm_id: vmId, timeout_secs: z.number().int().nonnegative() }),
    { [OK]: empty, [NOT_FOUND]: null },
    "[vm] SetAutoSuspendTimeoutRequest (0 disables)",
  ),
  operation(
    "SetAutoHibernateTimeout",
    z.looseObject({ vm_id: vmId, timeout_secs: z.number().int().nonnegative() }),
    { [OK]: empty, [NOT_FOUND]: null },
    "[vm] SetAutoHibernateTimeoutRequest (0 disables)",
  ),
  operation(
    "Exec",
    // The first chunk names the machine and the command ([vm] rpc Exec's comment).
    z.looseObject({
      vm_id: vmId,
      command: z.string().min(1, "the first chunk carries the command"),
      stdin: z.literal(false),
    }),
    // A call the client cancels ends CANCELLED ([vm] rpc Exec: "Cancelling the call kills the remote command").
    { [OK]: null, [CANCELLED]: null, [NOT_FOUND]: null, [FAILED_PRECONDITION]: null },
    "[vm] rpc Exec, ExecChunk 1-6,10; fakeapi_test.go Exec (FAILED_PRECONDITION when not running)",
  ),
  operation(
    "UploadFileStream",
    z.looseObject({ vm_id: vmId, path: z.string().startsWith("/"), total_size: z.number().int().nonnegative() }),
    { [OK]: z.looseObject({ bytes_written: z.number().int().nonnegative() }), [NOT_FOUND]: null },
    "[vm] rpc UploadFileStream, UploadFileChunk 1-4",
  ),
];

/** A later Exec chunk from the client: stdin only ([vm] rpc Exec's comment: later chunks carry stdin). */
export const execStdinChunk = z.looseObject({ stdin: z.literal(true), command: z.literal(""), vm_id: z.literal("") });

/**
 * The field numbers a message's bytes carry that its declaration lacks, or
 * carry with the wrong wire type: a client that sends them is not speaking
 * the published definition.
 */
export function undeclaredFields(type: import("protobufjs").Type, bytes: Uint8Array): string[] {
  const problems: string[] = [];
  for (const field of readWireFields(bytes)) {
    const declared = type.fieldsById[field.number];
    if (!declared) {
      problems.push(`field ${field.number} is not declared in ${type.name}`);
      continue;
    }
    const lengthDelimited = ["string", "bytes"].includes(declared.type) || declared.resolvedType !== null;
    if (lengthDelimited !== (field.wireType === 2)) {
      problems.push(`field ${field.number} (${declared.name}) has wire type ${field.wireType}`);
    }
  }
  return problems;
}
