import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { type ComputerContainers, demuxEngineStream, type Exchange } from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { END_STREAM, envelope } from "./connect-envelope.js";
import type { EmulatedSandbox } from "./e2b-sandbox.js";
import { CONNECT_HTTP_STATUS, type ConnectCode } from "./e2b-schemas.js";
import { endEventOf, LEADER_DIR, LEADER_PATH, leaderEnv, PREAMBLE, parsePreamble } from "./envd-leader.js";

// envd's process service (e2b-dev/infra packages/envd/internal/services/process/):
// a process belongs to the sandbox, not to the request that started it; its
// output goes to whoever is subscribed (the Start stream, Connect streams)
// and is dropped when nobody is; its end is kept 30 s for a late Connect.

/** How long an ended process's end event is kept (process/service.go terminatedRetentionTTL). */
const RETAIN_END_MS = 30_000;
/** envd's keepalive interval when the request names none it can parse (permissions/keepalive.go). */
const DEFAULT_KEEPALIVE_MS = 90_000;

type Json = Record<string, unknown>;
export type ConnectFailure = { code: ConnectCode; message: string };

export interface ProcessConfig {
  cmd: string;
  args?: string[];
  envs?: Record<string, string>;
  cwd?: string;
}

interface Subscriber {
  data(kind: "stdout" | "stderr", chunk: Buffer): void;
  end(end: Json): void;
}

export interface EnvdProcess {
  pid: number;
  tag?: string;
  config: ProcessConfig;
  exec: Docker.Exec;
  /** The engine's stream: the command's stdin while `stdinOpen`. */
  stream: Duplex;
  stdinOpen: boolean;
  subscribers: Set<Subscriber>;
  /** SendSignal with SIGKILL or SIGTERM: output is no longer read, the end follows the leader's exit. */
  outputCancelled: boolean;
  cancelOutput(): void;
}

export interface RetainedEnd {
  tag?: string;
  end: Json;
  until: number;
}

/** The exec's state once the engine says it ended (it may lag the stream's end a moment); undefined when it is gone. */
async function exitedState(exec: Docker.Exec): Promise<Docker.ExecInspectInfo | undefined> {
  for (let tries = 0; tries < 50; tries++) {
    const info = await exec.inspect().catch(() => undefined);
    if (!info?.Running) return info;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

/** What the process service needs of its emulator. */
export interface ProcessHost {
  containers: ComputerContainers;
  /** The keepalive interval, overriding the request's Keepalive-Ping-Interval (a test option). */
  keepaliveMs?: number;
  /** An injected fault: this start fails at the edge (502). */
  takeStartFailure(): boolean;
  /** An injected fault: this start's stream is cut after that many output bytes (-1: not). */
  takeStreamDrop(): number;
  /** An injected drop happened. */
  streamDropped(): void;
  /** An injected fault: this start's stream goes silent after its start event (no output, keepalive or end). */
  takeSilence(): boolean;
}

/**
 * A Connect server stream being answered: the envelopes as they go, and, for
 * the recorder, the messages in order (a run of data events kept as one, its
 * bytes left out) and the end-of-stream message.
 */
export class ProcessStream {
  private readonly messages: Json[] = [];
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly exchange: Exchange | undefined,
  ) {}

  get open(): boolean {
    return !this.closed && !this.res.destroyed;
  }

  event(event: Json): void {
    if (!this.open) return;
    this.head();
    this.res.write(envelope({ event }));
    const kind = Object.keys(event)[0];
    const last = this.messages.at(-1)?.event as Json | undefined;
    if (kind === "data") {
      const [name] = Object.keys(event.data as Json);
      if (!(last?.data && Object.keys(last.data as Json)[0] === name))
        this.messages.push({ event: { data: { [name as string]: "" } } });
    } else this.messages.push({ event });
  }

  finish(error?: ConnectFailure): void {
    if (!this.open) return;
    this.closed = true;
    this.head();
    const endOfStream = error ? { error } : {};
    this.res.end(envelope(endOfStream, END_STREAM));
    this.exchange?.answer(200, { messages: this.messages, endOfStream });
  }

  /** The connection is cut (the edge lost the sandbox, or an injected drop): nothing more, no end. */
  /**
   * Cuts the connection after what was written so far leaves (a drop after
   * `afterBytes` delivered bytes): Node corks a response's socket until the
   * next tick, and a destroy in the same tick would lose the start event too.
   */
  cut(): void {
    this.closed = true;
    setImmediate(() => {
      this.res.socket?.destroy();
      this.res.destroy();
    });
  }

  /** Cuts the connection before anything of the stream was written. */
  cutNow(): void {
    this.closed = true;
    this.res.socket?.destroy();
    this.res.destroy();
  }

  private head(): void {
    if (!this.res.headersSent) this.res.writeHead(200, { "content-type": "application/connect+json" });
  }
}

export class EnvdProcesses {
  constructor(private readonly host: ProcessHost) {}

  /** process.Process/Start (start.go handleStart, handler.go New/Start/Wait). */
  async start(
    req: IncomingMessage,
    res: ServerResponse,
    sandbox: EmulatedSandbox,
    request: { process?: ProcessConfig; stdin?: boolean; tag?: string; pty?: unknown },
    user: string,
    exchange: Exchange,
  ): Promise<void> {
    if (this.host.takeStartFailure()) {
      // Injected: the edge fails the call; not the service's answer, so not recorded.
      const body = JSON.stringify({ sandboxId: sandbox.id, message: "injected failure", code: 502 });
      return void res.writeHead(502, { "content-type": "application/json" }).end(body);
    }
    const writer = new ProcessStream(res, exchange);
    if (request.pty !== undefined) return writer.finish({ code: "unimplemented", message: "the emulator has no PTY" });
    const config: ProcessConfig = { cwd: undefined, ...request.process, cmd: request.process?.cmd ?? "" };
    // process.proto StartRequest.stdin: absent means true.
    const stdin = request.stdin !== false;
    const statusFile = `${LEADER_DIR}/status/${randomBytes(8).toString("hex")}`;
    const env = leaderEnv({
      user,
      cwd: config.cwd ?? "",
      statusFile,
      argv: [config.cmd, ...(config.args ?? [])],
      vars: [...Object.entries(sandbox.envVars), ...Object.entries(config.envs ?? {})],
    });
    const started = await this.host.containers
      .startCommand(sandbox.containerId, ["perl", LEADER_PATH], { user: "0:0", env, workingDir: "/", stdin })
      .catch((error: Error) => error);
    if (started instanceof Error) return writer.finish({ code: "unavailable", message: started.message.slice(0, 200) });
    sandbox.streams.add(res);
    res.once("close", () => sandbox.streams.delete(res));
    const { exec, stream } = started;
    let proc: EnvdProcess | undefined;
    let failed = false;
    let ended = false;
    let pending: Buffer = Buffer.alloc(0);
    const early: ["stdout" | "stderr", Buffer][] = [];
    const emit = (kind: "stdout" | "stderr", chunk: Buffer) => {
      if (!proc) return void early.push([kind, chunk]);
      if (proc.outputCancelled) return;
      for (const subscriber of proc.subscribers) subscriber.data(kind, chunk);
    };
    const onPreamble = (line: string) => {
      const said = parsePreamble(line);
      const command = [config.cmd, ...(config.args ?? [])].join(" ");
      if (said?.kind !== "pid") {
        failed = true;
        // handler.go New/Start: errors before the first event, as the end of the stream.
        if (said?.kind === "user") writer.finish({ code: "unauthenticated", message: `invalid username: '${user}'` });
        else if (said?.kind === "cwd")
          writer.finish({ code: "invalid_argument", message: `cwd '${said.path}' does not exist` });
        else if (said?.kind === "invalid") writer.finish({ code: "invalid_argument", message: said.message });
        else if (said?.kind === "start")
          writer.finish({ code: "invalid_argument", message: `error starting process '${command}': ${said.message}` });
        else writer.finish({ code: "internal", message: "the emulator's process leader said nothing it knows" });
        return;
      }
      proc = this.track(sandbox, said.pid, config, request.tag, exec, stream, stdin, () => void finish());
      const dropAfter = this.host.takeStreamDrop();
      if (dropAfter === 0) {
        // Injected: cut before the start event reaches the client; the process runs on.
        writer.cutNow();
        return void this.host.streamDropped();
      }
      writer.event({ start: { pid: said.pid } });
      // Injected: the stream stays open and says nothing more; the process runs on.
      if (this.host.takeSilence()) return;
      this.subscribe(proc, writer, req, res, dropAfter);
      for (const [kind, chunk] of early.splice(0)) emit(kind, chunk);
    };
    demuxEngineStream(
      stream,
      (chunk) => emit("stdout", chunk),
      (chunk) => {
        if (proc || failed) return void (proc ? emit("stderr", chunk) : undefined);
        pending = Buffer.concat([pending, chunk]);
        const newline = pending.indexOf(10);
        if (newline < 0) return;
        const line = pending.subarray(PREAMBLE.length, newline).toString("utf8");
        const rest = pending.subarray(newline + 1);
        onPreamble(line);
        if (rest.length > 0) emit("stderr", rest);
      },
    );
    stream.on("error", () => {});
    const finish = async () => {
      if (ended) return;
      ended = true;
      if (!proc) {
        if (!failed) writer.finish({ code: "internal", message: "the emulator's process leader did not start" });
        return;
      }
      const done = proc;
      const info = await exitedState(exec);
      sandbox.processes.delete(done.pid);
      if (!info) return; // the sandbox went away: its streams were cut
      const code = info.ExitCode ?? -1;
      const status = code > 128 ? await this.signalStatus(sandbox, statusFile) : undefined;
      const end = endEventOf(status !== undefined ? { signal: status & 127 } : { exitCode: code });
      sandbox.ended.set(done.pid, { tag: done.tag, end, until: Date.now() + RETAIN_END_MS });
      for (const subscriber of done.subscribers) subscriber.end(end);
      done.subscribers.clear();
    };
    // handler.go Wait: the end comes once every holder of the output pipes closed them
    // (the engine's stream ends), or, after SIGKILL/SIGTERM, once the leader exited.
    stream.once("end", () => void finish());
    stream.once("close", () => void finish());
  }

  /** process.Process/Connect (connect.go): start{pid}, then what the process says; a recent end is replayed. */
  connect(
    req: IncomingMessage,
    res: ServerResponse,
    sandbox: EmulatedSandbox,
    request: { process?: Json },
    exchange: Exchange,
  ): void {
    const writer = new ProcessStream(res, exchange);
    const found = this.find(sandbox, request.process);
    if ("code" in found) {
      const retained = this.findEnded(sandbox, request.process);
      if (!retained) {
        writer.finish(found);
        return;
      }
      writer.event({ start: { pid: retained.pid } });
      writer.event({ end: retained.end });
      writer.finish();
      return;
    }
    sandbox.streams.add(res);
    res.once("close", () => sandbox.streams.delete(res));
    writer.event({ start: { pid: found.pid } });
    this.subscribe(found, writer, req, res, -1);
  }

  /** The unary RPCs: List, SendInput, CloseStdin, SendSignal, Update. */
  async unary(sandbox: EmulatedSandbox, rpc: string, body: Json): Promise<Json | ConnectFailure> {
    if (rpc === "List") {
      // list.go: every live process with its config, pid and tag.
      const processes = [...sandbox.processes.values()].map((p) => ({
        config: { ...p.config, args: p.config.args ?? [] },
        pid: p.pid,
        ...(p.tag !== undefined ? { tag: p.tag } : {}),
      }));
      return processes.length > 0 ? { processes } : {};
    }
    const found = this.find(sandbox, body.process);
    if ("code" in found) return found;
    if (rpc === "SendInput") {
      const input = (body.input ?? {}) as { stdin?: string; pty?: string };
      // input.go handleInput; handler.go WriteStdin, WriteTty.
      if (input.pty !== undefined)
        return { code: "internal", message: "error writing to tty: tty not assigned to process" };
      if (!found.stdinOpen) return { code: "internal", message: "error writing to stdin: stdin not enabled or closed" };
      found.stream.write(Buffer.from(input.stdin ?? "", "base64"));
      return {};
    }
    if (rpc === "CloseStdin") {
      // handler.go CloseStdin: no stdin, or closed already, is no error.
      if (found.stdinOpen) found.stream.end();
      found.stdinOpen = false;
      return {};
    }
    if (rpc === "SendSignal") {
      // signal.go: SIGKILL and SIGTERM only; only the leader is signalled (cmd.Process.Signal).
      const name = ({ SIGNAL_SIGKILL: "KILL", 9: "KILL", SIGNAL_SIGTERM: "TERM", 15: "TERM" } as Json)[
        String(body.signal ?? "SIGNAL_UNSPECIFIED")
      ];
      if (!name) return { code: "unimplemented", message: `invalid signal: ${body.signal ?? "SIGNAL_UNSPECIFIED"}` };
      found.cancelOutput();
      const argv = ["kill", "-s", name as string, String(found.pid)];
      const sent = await this.host.containers.run(sandbox.containerId, argv, { user: "0:0" });
      if (sent.exitCode !== 0)
        return { code: "internal", message: `error sending signal: ${sent.stderr.toString("utf8").trim()}` };
      return {};
    }
    if (rpc === "Update") {
      // handler.go ResizeTty: no PTY here.
      if (body.pty !== undefined)
        return { code: "internal", message: "error resizing tty: tty not assigned to process" };
      return {};
    }
    return { code: "unimplemented", message: `${rpc} is not emulated` };
  }

  /** The HTTP answer of a unary Connect error. */
  static failure(failure: ConnectFailure): { status: number; body: ConnectFailure } {
    return { status: CONNECT_HTTP_STATUS[failure.code], body: failure };
  }

  private track(
    sandbox: EmulatedSandbox,
    pid: number,
    config: ProcessConfig,
    tag: string | undefined,
    exec: Docker.Exec,
    stream: Duplex,
    stdin: boolean,
    finish: () => void,
  ): EnvdProcess {
    // A new process with a pid drops what was kept of an older one (start.go).
    sandbox.ended.delete(pid);
    let poll: NodeJS.Timeout | undefined;
    const proc: EnvdProcess = {
      pid,
      tag,
      config,
      exec,
      stream,
      stdinOpen: stdin,
      subscribers: new Set(),
      outputCancelled: false,
      cancelOutput: () => {
        proc.outputCancelled = true;
        poll ??= setInterval(async () => {
          const state = await exec.inspect().catch(() => undefined);
          if (!state?.Running) {
            clearInterval(poll);
            finish();
          }
        }, 100);
      },
    };
    stream.once("close", () => clearInterval(poll));
    sandbox.processes.set(pid, proc);
    return proc;
  }

  /**
   * One stream follows the process: data events, a keepalive after each quiet
   * interval (start.go: the ticker resets after every data event), its end.
   * `dropAfter` bytes (an injected drop) cut it, the process running on.
   */
  private subscribe(
    proc: EnvdProcess,
    writer: ProcessStream,
    req: IncomingMessage,
    res: ServerResponse,
    dropAfter: number,
  ): void {
    const header = Number.parseInt(String(req.headers["keepalive-ping-interval"] ?? ""), 10);
    const interval = this.host.keepaliveMs ?? (header > 0 ? header * 1000 : DEFAULT_KEEPALIVE_MS);
    let ticker = setInterval(() => writer.event({ keepalive: {} }), interval);
    let sent = 0;
    const subscriber: Subscriber = {
      data: (kind, chunk) => {
        writer.event({ data: { [kind]: chunk.toString("base64") } });
        clearInterval(ticker);
        ticker = setInterval(() => writer.event({ keepalive: {} }), interval);
        sent += chunk.length;
        if (dropAfter >= 0 && sent >= dropAfter) {
          proc.subscribers.delete(subscriber);
          clearInterval(ticker);
          writer.cut();
          this.host.streamDropped();
        }
      },
      end: (end) => {
        clearInterval(ticker);
        writer.event({ end });
        writer.finish();
      },
    };
    proc.subscribers.add(subscriber);
    res.once("close", () => {
      clearInterval(ticker);
      proc.subscribers.delete(subscriber);
    });
  }

  /** process/service.go getProcess: by pid or by tag; unknown is not_found. */
  private find(sandbox: EmulatedSandbox, selector: unknown): EnvdProcess | ConnectFailure {
    const { pid, tag } = (selector ?? {}) as { pid?: number | string; tag?: string };
    if (pid !== undefined) {
      const found = sandbox.processes.get(Number(pid));
      return found ?? { code: "not_found", message: `process with pid ${pid} not found` };
    }
    if (tag !== undefined) {
      const found = [...sandbox.processes.values()].find((p) => p.tag === tag);
      return found ?? { code: "not_found", message: `process with tag ${tag} not found` };
    }
    return { code: "unimplemented", message: "invalid input type <nil>" };
  }

  private findEnded(sandbox: EmulatedSandbox, selector: unknown): (RetainedEnd & { pid: number }) | undefined {
    const now = Date.now();
    for (const [pid, kept] of sandbox.ended) if (kept.until < now) sandbox.ended.delete(pid);
    const { pid, tag } = (selector ?? {}) as { pid?: number | string; tag?: string };
    if (pid !== undefined) {
      const kept = sandbox.ended.get(Number(pid));
      return kept && { ...kept, pid: Number(pid) };
    }
    for (const [at, kept] of sandbox.ended) if (tag !== undefined && kept.tag === tag) return { ...kept, pid: at };
    return undefined;
  }

  /** The raw wait status the leader kept for a signal death (128+n is ambiguous otherwise). */
  private async signalStatus(sandbox: EmulatedSandbox, file: string): Promise<number | undefined> {
    const argv = ["sh", "-c", 'cat -- "$1" 2>/dev/null; rm -f -- "$1"', "status", file];
    const read = await this.host.containers.run(sandbox.containerId, argv, { user: "0:0" }).catch(() => undefined);
    const status = Number.parseInt(read?.stdout.toString("utf8") ?? "", 10);
    return Number.isInteger(status) && (status & 127) !== 0 ? status : undefined;
  }
}
