import { randomBytes } from "node:crypto";
import { demuxEngineStream, type ServiceRecorder, untilEnded } from "@agent-computer/testing/emulator";
import * as grpc from "@grpc/grpc-js";
import { type BoxdMessage, type BoxdMethod, boxdMethod } from "../boxd-definition.js";
import { execStdinChunk } from "./boxd-definition.js";
import { BOXD_HOME, type BoxdVms, MACHINE_USER, type VmRecord } from "./boxd-vms.js";

/** What the streaming calls need of the emulator. */
export interface StreamHost {
  readonly recorder: ServiceRecorder;
  readonly vms: BoxdVms;
  /** Ends of the Exec calls under way, so closing the emulator ends them. */
  readonly execs: Set<() => void>;
  /** An injected fault: this Exec call is left open and never answered. */
  takeSilence(): boolean;
  decode(method: BoxdMethod, bytes: Buffer): BoxdMessage;
  /** The organisation of the call's token (throws a refusal). */
  orgOf(metadata: grpc.Metadata): string;
  machine(org: string, idOrName: string): VmRecord;
}

/** A refusal with a gRPC code (docs.boxd.sh reference/grpc-api, "Errors"). */
export class GrpcRefusal extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** The error object grpc-js sends for a refusal. */
export function serviceErrorOf(error: unknown): Partial<grpc.ServiceError> & Error {
  const refusal = error instanceof GrpcRefusal ? error : new GrpcRefusal(grpc.status.INTERNAL, String(error));
  return Object.assign(new Error(refusal.message), {
    code: refusal.code,
    details: refusal.message,
    metadata: new grpc.Metadata(),
  });
}

/**
 * The command runs as the machine's user from its home, in a session of
 * its own whose id is written to `$0`, so what the command started can be
 * ended with it: "what an exec starts ends with it" (issue 49, from
 * docs.boxd.sh: long-lived services are started as systemd units), and
 * cancelling the call kills the command's process group ([vm] rpc Exec's
 * comment). A process that starts a session of its own escapes, as one
 * would leave a process group.
 */
const SESSION_RUNNER = 'echo $$ > "$0"; exec sh -c "$1"';
// Kills every process of the recorded session (procps' pkill, in the computer
// image), twice: a process forked during the first pass. A shell loop over
// /proc (two forks per process) made the bench's exec round trip, a desktop's
// processes running, 4.1 times Docker's; with pkill it is 2.3 times.
const KILL_SESSION = `sid=$(cat "$1" 2>/dev/null) || exit 0
[ -n "$sid" ] || exit 0
pkill -KILL -s "$sid"; pkill -KILL -s "$sid"; rm -f "$1"; true`;

/**
 * One Exec call ([vm] rpc Exec; ExecChunk): the first chunk names the
 * machine and the command, later chunks carry stdin, the client's
 * half-close is EOF; output goes back as data chunks (stderr marked
 * `is_stderr`) and the last chunk carries `exit_code`; a cancelled call
 * kills the command's session. A machine that is not running refuses
 * with FAILED_PRECONDITION ([vm] fakeapi_test.go Exec).
 */
export function runExec(host: StreamHost, call: grpc.ServerDuplexStream<Buffer, BoxdMessage>): void {
  const method = boxdMethod("Exec");
  let started = false;
  call.once("data", (bytes: Buffer) => {
    started = true;
    call.pause();
    if (host.takeSilence()) return leaveSilent(host, call);
    void startExec(host, call, method, bytes);
  });
  call.once("end", () => {
    if (!started) {
      host.recorder.violations.push({
        call: `POST ${method.path}`,
        operation: "Exec",
        where: "request",
        message: "the call ended before its first chunk",
      });
      call.end();
    }
  });
}

/** Injected: the call stays open with no output, exit or error, the command never run, until the client cancels it. */
function leaveSilent(host: StreamHost, call: grpc.ServerDuplexStream<Buffer, BoxdMessage>): void {
  const end = () => call.end();
  host.execs.add(end);
  call.on("cancelled", () => host.execs.delete(end));
}

async function startExec(
  host: StreamHost,
  call: grpc.ServerDuplexStream<Buffer, BoxdMessage>,
  method: BoxdMethod,
  firstBytes: Buffer,
): Promise<void> {
  const first = host.decode(method, firstBytes);
  const exchange = host.recorder.request("POST", method.path, { body: first });
  let vm: VmRecord;
  let org: string;
  try {
    org = host.orgOf(call.metadata);
    vm = host.machine(org, String(first.vm_id));
    if (vm.status !== "running") throw new GrpcRefusal(grpc.status.FAILED_PRECONDITION, `${vm.name} is not running`);
  } catch (error) {
    refuseCall(exchange, call, error);
    return;
  }
  const sessionFile = `/tmp/.boxd-exec-${randomBytes(6).toString("hex")}.sid`;
  let started: Awaited<ReturnType<BoxdVms["startCommand"]>>;
  try {
    started = await host.vms.startCommand(
      vm,
      ["setsid", "-w", "sh", "-c", SESSION_RUNNER, sessionFile, String(first.command)],
      { user: MACHINE_USER, env: { HOME: BOXD_HOME }, workingDir: BOXD_HOME, stdin: true },
    );
  } catch (error) {
    // The machine went away between the check above and the engine's exec (a
    // destroy under way: "Removal In Progress"); left unanswered, the failure
    // was an unhandled rejection of the emulator (boxd-runtime.test.ts). A
    // machine destroyed meanwhile is NOT_FOUND, as a new call would say; one
    // the service still lists is UNAVAILABLE, the definition's answer for a
    // service that cannot serve the call now (boxd-definition.ts, COMMON).
    refuseCall(exchange, call, goneOrUnavailable(host, org, vm, error));
    return;
  }
  const { exec, stream } = started;
  // As the machine's user, whose every exec process is: root in these containers has no CAP_KILL
  // (testing's ComputerContainers drops every capability), so as root the kill reached none of them.
  const killSession = () =>
    host.vms.run(vm, ["sh", "-c", KILL_SESSION, "kill-session", sessionFile], { user: MACHINE_USER }).then(
      () => undefined,
      () => undefined,
    );
  let cancelled = false;
  const end = () => {
    cancelled = true;
    stream.destroy();
  };
  host.execs.add(end);
  call.on("cancelled", () => {
    cancelled = true;
    void killSession().then(() => stream.destroy());
  });

  call.on("data", (bytes: Buffer) => {
    const chunk = host.decode(method, bytes);
    const checked = execStdinChunk.safeParse(chunk);
    if (!checked.success) {
      host.recorder.violations.push({
        call: `POST ${method.path}`,
        operation: "Exec",
        where: "request",
        message: `a later chunk is not stdin only: ${checked.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      });
    }
    const data = chunk.data as Buffer;
    if (data.length > 0 && !stream.destroyed && !stream.write(data)) {
      call.pause();
      stream.once("drain", () => call.resume());
    }
  });
  call.on("end", () => stream.end());
  call.resume();

  const ended = untilEnded(stream);
  demuxEngineStream(
    stream,
    (data) => call.write({ data }),
    (data) => call.write({ data, is_stderr: true }),
  );
  await ended;
  host.execs.delete(end);
  await killSession();
  if (cancelled) {
    exchange.answer(grpc.status.CANCELLED);
    return;
  }
  const state = await exec.inspect().catch(() => undefined);
  exchange.answer(grpc.status.OK);
  call.write({ exit_code: state?.ExitCode ?? -1 });
  call.end();
}

function goneOrUnavailable(host: StreamHost, org: string, vm: VmRecord, error: unknown): GrpcRefusal {
  try {
    host.machine(org, vm.vm_id);
  } catch (gone) {
    if (gone instanceof GrpcRefusal) return gone;
  }
  const why = error instanceof Error ? error.message : String(error);
  return new GrpcRefusal(grpc.status.UNAVAILABLE, `${vm.name} could not run the command: ${why}`);
}

/** Ends a call with the refusal `error` stands for (INTERNAL for any other error), recorded as its answer. */
function refuseCall(
  exchange: { answer(status: number): void },
  call: grpc.ServerDuplexStream<Buffer, BoxdMessage>,
  error: unknown,
): void {
  const failure = serviceErrorOf(error);
  exchange.answer(failure.code as number);
  call.emit("error", failure);
}

/**
 * One UploadFileStream call ([vm] rpc UploadFileStream; UploadFileChunk):
 * the first chunk names the machine, path and total size, later ones carry
 * bytes; the file is written as the machine's user, and the answer says
 * how many bytes were written.
 */
export function runUpload(
  host: StreamHost,
  call: grpc.ServerReadableStream<Buffer, BoxdMessage>,
  callback: grpc.sendUnaryData<BoxdMessage>,
): void {
  const method = boxdMethod("UploadFileStream");
  const chunks: BoxdMessage[] = [];
  call.on("data", (bytes: Buffer) => chunks.push(host.decode(method, bytes)));
  call.on("end", () => {
    void (async () => {
      const first = chunks[0] ?? {};
      const exchange = host.recorder.request("POST", method.path, { body: first });
      try {
        const vm = host.machine(host.orgOf(call.metadata), String(first.vm_id ?? ""));
        if (vm.status !== "running")
          throw new GrpcRefusal(grpc.status.FAILED_PRECONDITION, `${vm.name} is not running`);
        const data = Buffer.concat(chunks.map((chunk) => chunk.data as Buffer));
        const done = await host.vms.run(vm, ["sh", "-c", 'cat > "$1"', "upload", String(first.path)], {
          user: MACHINE_USER,
          input: data,
        });
        if (done.exitCode !== 0)
          throw new GrpcRefusal(grpc.status.INVALID_ARGUMENT, done.stderr.toString("utf8").trim());
        const answer = { bytes_written: data.length };
        exchange.answer(grpc.status.OK, answer);
        callback(null, answer);
      } catch (error) {
        const failure = serviceErrorOf(error);
        exchange.answer(failure.code as number);
        callback(failure);
      }
    })();
  });
}
