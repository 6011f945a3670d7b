import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import { type ComputerContainers, type KeptCommand, startKept } from "@agent-computer/testing/emulator";
import { refuse, VM_USER, type VmRecord } from "./createos-vms.js";

type Json = Record<string, unknown>;

/**
 * Each managed process's tree carries this variable, so DELETE and
 * `/signal` find every process of it in the VM (children inherit it).
 * The emulator's own means: the service's agent tracks the tree itself
 * (COMPATIBILITY.md: DELETE "terminate[s] the whole process tree").
 */
const TREE_MARKER = "CREATEOS_EMULATOR_PROCESS";

/** One frame of `/connect` (responses.go ManagedProcessConnectFrame). */
export type ConnectFrame = Json;

/** Who follows a process's output: each frame as it comes. */
export type FrameListener = (frame: ConnectFrame | "end") => void;

/**
 * A managed process (responses.go ManagedProcess): started with pipes,
 * its output kept whole and numbered from 1 so `/connect?after=N`
 * replays what came after N (processes.go Connect), its stdin open until
 * `/stdin/close`. The engine's stream ends when every holder of the
 * process's output closed it: the leader and the tree are then both
 * reported exited (the emulator cannot tell the two apart).
 */
export class ManagedProcessRecord {
  readonly createdAt = new Date().toISOString();
  finishedAt: string | undefined;
  state: "running" | "exited" | "failed" = "running";
  signal: string | undefined;
  inputSeq = 0;
  readonly listeners = new Set<FrameListener>();
  private exited: (() => void) | undefined;
  /** Resolves when the process ended (or the VM went). */
  readonly done = new Promise<void>((resolve) => {
    this.exited = resolve;
  });

  constructor(
    readonly id: string,
    readonly kept: KeptCommand,
    /** A number per process, not the guest's pid (the engine's exec does not tell it). */
    readonly pid: number,
    readonly cmd: string,
    readonly args: string[],
    readonly cwd: string,
  ) {
    kept.followers.add({ data: () => this.tell(), end: () => this.finish() });
  }

  /** Output frames after sequence `after`, and the exit frame once it ended. */
  framesAfter(after: number): ConnectFrame[] {
    const frames: ConnectFrame[] = this.kept.output.slice(after).map(({ stream, chunk }, index) => ({
      type: "data",
      seq: after + index + 1,
      stream: stream === 1 ? "stdout" : "stderr",
      data_base64: chunk.toString("base64"),
    }));
    if (this.state !== "running") frames.push(this.exitFrame());
    return frames;
  }

  exitFrame(): ConnectFrame {
    return {
      type: "exit",
      ...(this.kept.exitCode === undefined ? {} : { exit_code: this.kept.exitCode }),
      ...(this.signal ? { signal: this.signal } : {}),
    };
  }

  /** responses.go ManagedProcess. */
  get view(): Json {
    const output = this.kept.output;
    const ended = this.state !== "running";
    return {
      process_id: this.id,
      kind: "process",
      pid: this.pid,
      state: this.state,
      leader_exited: ended,
      tree_exited: ended,
      created_at: this.createdAt,
      ...(this.finishedAt ? { finished_at: this.finishedAt } : {}),
      ...(ended && this.kept.exitCode !== undefined ? { exit_code: this.kept.exitCode } : {}),
      ...(this.signal ? { signal: this.signal } : {}),
      cmd: this.cmd,
      ...(this.args.length ? { args: this.args } : {}),
      cwd: this.cwd,
      output: {
        oldest_seq: output.length ? 1 : 0,
        newest_seq: output.length,
        bytes: output.reduce((sum, part) => sum + part.chunk.length, 0),
      },
    };
  }

  /** The VM went: the process ends with it. */
  end(): void {
    this.kept.stdin?.destroy();
    this.finish();
  }

  private tell(): void {
    const seq = this.kept.output.length;
    const last = this.kept.output[seq - 1];
    if (!last) return;
    const frame = this.framesAfter(seq - 1)[0] as ConnectFrame;
    for (const listener of this.listeners) listener(frame);
  }

  private finish(): void {
    if (this.state !== "running") return;
    this.state = this.kept.exitCode === undefined || this.kept.exitCode < 0 ? "failed" : "exited";
    this.finishedAt = new Date().toISOString();
    for (const listener of this.listeners) {
      listener(this.exitFrame());
      listener("end");
    }
    this.listeners.clear();
    this.exited?.();
  }
}

/** The managed-process routes of one emulator (Go sandbox/processes.go). */
export class ManagedProcesses {
  /** Each VM's processes, kept while the VM lives (across pause and resume: memory is kept). */
  private readonly byVm = new Map<string, Map<string, ManagedProcessRecord>>();

  constructor(
    private readonly containers: ComputerContainers,
    /** Engine streams held open, closed with the emulator. */
    private readonly open: Set<Socket>,
  ) {}

  /** The VM's managed processes. */
  of(vm: VmRecord): Map<string, ManagedProcessRecord> {
    let processes = this.byVm.get(vm.id);
    if (!processes) {
      processes = new Map();
      this.byVm.set(vm.id, processes);
    }
    return processes;
  }

  /** The VM went: its processes end with it. */
  endAll(vm: VmRecord): void {
    for (const process of this.of(vm).values()) process.end();
    this.byVm.delete(vm.id);
  }

  /** processes.go Create: pipes (a `pty` is refused: not emulated), `cmd` run without a shell, `env` added. */
  async create(vm: VmRecord, body: Json): Promise<ManagedProcessRecord> {
    const container = vm.running();
    if (body.pty !== undefined) throw refuse(400, "pty processes are not emulated");
    const cmd = body.cmd as string | undefined;
    if (!cmd) throw refuse(400, "cmd is required");
    const args = (body.args as string[] | undefined) ?? [];
    const cwd = (body.cwd as string | undefined) ?? "/";
    const id = `proc_${randomBytes(8).toString("hex")}`;
    const kept = await startKept(
      this.containers,
      container,
      [cmd, ...args],
      {
        user: VM_USER,
        env: { ...(body.env as Record<string, string> | undefined), [TREE_MARKER]: id },
        workingDir: cwd,
      },
      this.open,
    );
    const record = new ManagedProcessRecord(id, kept, this.of(vm).size + 100, cmd, args, cwd);
    this.of(vm).set(id, record);
    return record;
  }

  /** processes.go InputBytes: the bytes written to stdin; `input_seq` counts the writes. */
  input(process: ManagedProcessRecord, body: Json): Json {
    const stdin = process.kept.stdin;
    if (!stdin || stdin.writableEnded) throw refuse(409, "the process's stdin is closed");
    stdin.write(Buffer.from(body.data_base64 as string, "base64"));
    process.inputSeq += 1;
    return { input_seq: process.inputSeq };
  }

  /** processes.go CloseStandardInput. */
  closeStdin(process: ManagedProcessRecord): Json {
    const stdin = process.kept.stdin;
    if (stdin && !stdin.writableEnded) stdin.end();
    return { ok: true };
  }

  /** processes.go Signal: sent to every process of the tree (which one the service signals is not published). */
  async signal(vm: VmRecord, process: ManagedProcessRecord, signal: string): Promise<Json> {
    if (process.state === "running") await this.signalTree(vm, process.id, signal.replace(/^SIG/, ""));
    return { ok: true };
  }

  /** processes.go Delete: the tree terminated (TERM, then KILL after `grace_ms`); answers the process once ended. */
  async remove(vm: VmRecord, process: ManagedProcessRecord, graceMs: number): Promise<Json> {
    if (process.state === "running") {
      await this.signalTree(vm, process.id, "TERM");
      const ended = await Promise.race([
        process.done.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs)),
      ]);
      if (!ended) {
        process.signal = "SIGKILL";
        await this.signalTree(vm, process.id, "KILL");
        await Promise.race([process.done, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      } else if (!process.signal) {
        process.signal = "SIGTERM";
      }
    }
    this.of(vm).delete(process.id);
    return process.view;
  }

  /** processes.go Wait: long-polls until the process ended or `timeout_ms` passed, then answers its view. */
  async wait(process: ManagedProcessRecord, timeoutMs: number): Promise<Json> {
    await Promise.race([process.done, new Promise((resolve) => setTimeout(resolve, timeoutMs))]);
    return process.view;
  }

  /**
   * Signals every process of the tree as the VM's agent would (root with
   * every capability). A container's root lacks CAP_SYS_PTRACE and cannot
   * read another user's environ (nor may it take a privileged exec on
   * every engine), so the scan runs once as each user that owns a process:
   * a user reads its own processes' environ.
   */
  private async signalTree(vm: VmRecord, id: string, signal: string): Promise<void> {
    const container = vm.containerId;
    if (!container || vm.status !== "running") return;
    const script = `for p in /proc/[0-9]*; do grep -qzx "${TREE_MARKER}=$1" "$p/environ" 2>/dev/null && kill -"$2" "\${p#/proc/}" 2>/dev/null; done; true`;
    const owners = await this.containers
      .run(container, ["sh", "-c", "awk '/^Uid:/ { print $2 }' /proc/[0-9]*/status 2>/dev/null | sort -u"], {
        user: VM_USER,
      })
      .then((done) =>
        done.stdout
          .toString("utf8")
          .split("\n")
          .filter((uid) => /^\d+$/.test(uid)),
      )
      .catch(() => ["0"]);
    await Promise.all(
      owners.map((uid) =>
        this.containers.run(container, ["sh", "-c", script, "signal", id, signal], { user: uid }).catch(() => {}),
      ),
    );
  }
}
