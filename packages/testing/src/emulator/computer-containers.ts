import { randomBytes } from "node:crypto";
import type { Duplex, Readable } from "node:stream";
import type Docker from "dockerode";
import tar from "tar-stream";
import { FreezeGate } from "./freeze-gate.js";

/** How a service sets up one machine: what differs from service to service. */
export interface MachineSpec {
  image: string;
  /** A readable part of the container's name (the service's id). */
  name: string;
  /** Extra labels (the emulator's own label is always set). */
  labels?: Record<string, string>;
  /** "uid:gid" the machine's main process runs as. */
  user: string;
  env?: Record<string, string>;
  /** The main process (default `sleep infinity`, the entrypoint cleared). */
  cmd?: string[];
  entrypoint?: string[];
  /** Docker network (default "bridge"). */
  network?: string;
  /** `name:address` lines added to the machine's /etc/hosts (a service's DNS, standing in for public names in a test). */
  extraHosts?: string[];
  /** All capabilities dropped but SYS_CHROOT, and no-new-privileges, as a hardened service runs them (default true). */
  hardened?: boolean;
  /**
   * Capabilities an unhardened machine still goes without (`NET_RAW`: a
   * fenced machine's raw frames would pass a network fence inside its own
   * namespace, network-fence.ts, where a service's host-side rules see them).
   */
  dropCapabilities?: string[];
  /**
   * /dev/shm's size (the computer image's COMPUTER_SHM_BYTES: Chromium
   * needs it); unset leaves Docker's default (64 MiB), as a service that
   * sets no ShmSize gets.
   */
  shmBytes?: number;
  /** The seccomp profile, as JSON (the computer image's computerSeccompProfile()). */
  seccompProfile: string;
  /** Files (or, with `directory`, folders) put in before the first start; owned by root unless `uid`/`gid` say. */
  files?: MachineFile[];
}

/** One command's end: its exit code and both outputs, whole. */
export interface CollectedExec {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
}

/** A command started in a machine: its demultiplexed output as it comes, and its end. */
export interface StartedExec {
  exec: Docker.Exec;
  /** The engine's stream: write stdin to it (when asked for), destroy it to stop reading. */
  stream: Duplex;
}

export interface ExecOptions {
  user: string;
  env?: Record<string, string>;
  workingDir?: string;
  stdin?: boolean;
}

/**
 * The machines of one emulator: real containers of the computer image on
 * the Docker engine, labelled so `removeAll` finds every one (and the
 * images archives made). Services differ in user, home, entrypoint and
 * network; `MachineSpec` carries those, set as each service sets them.
 */
export class ComputerContainers {
  /** Label value of this emulator instance: its containers and archive images carry it. */
  readonly instance = randomBytes(4).toString("hex");
  private readonly gate = new FreezeGate();

  constructor(
    readonly docker: Docker,
    /** The label key of this kind of emulator ("agent-computer.test/box-emulator", ...). */
    readonly label: string,
  ) {}

  /** Creates and starts a machine; gives its container id and address. */
  async create(spec: MachineSpec): Promise<{ id: string; ip: string }> {
    const hardened = spec.hardened ?? true;
    const container = await this.docker.createContainer({
      name: `${this.label.split("/").pop()}-${this.instance}-${spec.name}-${randomBytes(2).toString("hex")}`,
      Image: spec.image,
      Cmd: spec.cmd ?? ["sleep", "infinity"],
      Entrypoint: spec.entrypoint ?? [],
      User: spec.user,
      WorkingDir: "/",
      Env: Object.entries(spec.env ?? {}).map(([k, v]) => `${k}=${v}`),
      Labels: { ...spec.labels, [this.label]: this.instance },
      HostConfig: {
        Init: true,
        ...(spec.shmBytes === undefined ? {} : { ShmSize: spec.shmBytes }),
        SecurityOpt: [`seccomp=${spec.seccompProfile}`, ...(hardened ? ["no-new-privileges:true"] : [])],
        ...(hardened
          ? { CapDrop: ["ALL"], CapAdd: ["SYS_CHROOT"] }
          : spec.dropCapabilities?.length
            ? { CapDrop: spec.dropCapabilities }
            : {}),
        NetworkMode: spec.network ?? "bridge",
        ...(spec.extraHosts?.length ? { ExtraHosts: spec.extraHosts } : {}),
      },
    });
    if (spec.files?.length) await container.putArchive(tarOf(spec.files), { path: "/" });
    return { id: container.id, ip: await this.start(container.id) };
  }

  /** Starts a stopped machine; gives its (new) address. */
  async start(id: string): Promise<string> {
    const container = this.docker.getContainer(id);
    await container.start().catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 304) throw error;
    });
    const info = await container.inspect();
    return Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress ?? "";
  }

  /** Stops a machine, its disk kept. */
  async stop(id: string): Promise<void> {
    await this.docker
      .getContainer(id)
      .stop({ t: 1 })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 304) throw error;
      });
  }

  /** Freezes a machine's processes, memory kept. */
  pause(id: string): Promise<void> {
    return this.gate.freeze(id, () => this.docker.getContainer(id).pause());
  }

  unpause(id: string): Promise<void> {
    return this.docker.getContainer(id).unpause();
  }

  /** Archives a machine: its filesystem becomes an image (named by `tag`), and the container goes. */
  async archive(id: string, tag: string): Promise<string> {
    const repo = `agent-computer-test/${this.label.split("/").pop()}-archive-${this.instance}`;
    // The machine stops first, as a service's archive ends its processes; the commit then freezes nothing.
    await this.stop(id);
    await this.commit(id, repo, tag);
    await this.remove(id);
    return `${repo}:${tag}`;
  }

  /** A snapshot of a running machine: its filesystem committed to an image (named by `tag`); unlike `archive`, the machine keeps running. */
  async snapshot(id: string, tag: string): Promise<string> {
    const repo = `agent-computer-test/${this.label.split("/").pop()}-snapshot-${this.instance}`;
    await this.commit(id, repo, tag);
    return `${repo}:${tag}`;
  }

  /** Commits a machine's filesystem to `repo:tag`; a running one is frozen meanwhile (FreezeGate). */
  private async commit(id: string, repo: string, tag: string): Promise<void> {
    const changes = [`LABEL ${this.label}=${this.instance}`];
    await this.gate.freeze(id, () => this.docker.getContainer(id).commit({ repo, tag, changes }));
  }

  /** Removes a machine (paused or not); a machine already gone is fine. */
  async remove(id: string): Promise<void> {
    const container = this.docker.getContainer(id);
    await container.unpause().catch(() => {});
    await container.remove({ force: true }).catch(() => {});
  }

  async removeImage(image: string): Promise<void> {
    await this.docker
      .getImage(image)
      .remove({ force: true })
      .catch(() => {});
  }

  /** Removes every machine and archive image of this emulator instance. */
  async removeAll(): Promise<void> {
    const filters = { label: [`${this.label}=${this.instance}`] };
    const containers = await this.docker.listContainers({ all: true, filters }).catch(() => []);
    await Promise.all(containers.map((c) => this.remove(c.Id)));
    const images = await this.docker.listImages({ filters }).catch(() => []);
    await Promise.all(images.map((i) => this.removeImage(i.Id)));
  }

  /** Starts a command in a machine; its output is read from `stream` (see `demuxEngineStream`). */
  startCommand(id: string, argv: string[], options: ExecOptions): Promise<StartedExec> {
    return this.gate.start(id, () => this.startNow(id, argv, options), untilJoined);
  }

  private async startNow(id: string, argv: string[], options: ExecOptions): Promise<StartedExec> {
    const exec = await this.docker.getContainer(id).exec({
      Cmd: argv,
      User: options.user,
      Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
      ...(options.workingDir ? { WorkingDir: options.workingDir } : {}),
      AttachStdin: options.stdin === true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    const stream = (await exec.start({ hijack: options.stdin === true, stdin: options.stdin === true })) as Duplex;
    return { exec, stream };
  }

  /**
   * Runs a command to its end and gives its exit code and output. `input`,
   * when given, is its stdin: bytes, or a stream (an upload as it arrives)
   * written at the engine's pace and never held whole; stdin is then
   * half-closed, so `cat > file` sees the end.
   */
  async run(id: string, argv: string[], options: ExecOptions & { input?: MachineInput }): Promise<CollectedExec> {
    const { exec, stream } = await this.startCommand(id, argv, { ...options, stdin: options.input !== undefined });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const ended = untilEnded(stream);
    demuxEngineStream(
      stream,
      (chunk) => stdout.push(chunk),
      (chunk) => stderr.push(chunk),
    );
    if (Buffer.isBuffer(options.input)) stream.end(options.input);
    else if (options.input !== undefined) {
      for await (const chunk of options.input) {
        // A command that ended early (its machine gone) drains nothing more: stop feeding it.
        if (!stream.write(chunk)) await Promise.race([new Promise((resolve) => stream.once("drain", resolve)), ended]);
        if (stream.destroyed || stream.writableEnded) break;
      }
      stream.end();
    }
    await ended;
    const state = await exec.inspect();
    return { exitCode: state.ExitCode ?? -1, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
  }
}

/** A command's stdin: bytes, or chunks as they come. */
export type MachineInput = Buffer | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** Resolves when the engine's stream ends, closes or fails. */
export function untilEnded(stream: Duplex): Promise<void> {
  return new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", () => resolve());
  });
}

/**
 * Splits the engine's multiplexed exec output (1 byte stream id, 3 zero
 * bytes, a big-endian uint32 length, the payload) into stdout and stderr.
 */
export function demuxEngineStream(
  stream: Duplex,
  onStdout: (chunk: Buffer) => void,
  onStderr: (chunk: Buffer) => void,
): void {
  let pending: Buffer = Buffer.alloc(0);
  stream.on("data", (data: Buffer) => {
    pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const kind = pending[0];
      const payload = Buffer.from(pending.subarray(8, 8 + size));
      pending = pending.subarray(8 + size);
      if (kind === 2) onStderr(payload);
      else if (kind === 1) onStdout(payload);
    }
  });
}

/** A tar of a few files owned by root, for `putArchive`. */
/** A file or folder a machine starts with. */
export interface MachineFile {
  path: string;
  mode: number;
  body?: Buffer;
  directory?: boolean;
  uid?: number;
  gid?: number;
}

function tarOf(files: MachineFile[]): Readable {
  const pack = tar.pack();
  for (const file of files) {
    const header = { name: file.path.replace(/^\//, ""), mode: file.mode, uid: file.uid ?? 0, gid: file.gid ?? 0 };
    if (file.directory) pack.entry({ ...header, type: "directory" });
    else pack.entry(header, file.body ?? Buffer.alloc(0));
  }
  pack.finalize();
  return pack as unknown as Readable;
}

/** Until a started exec's process runs in the container (it has a pid) or is over; at most 5 s. */
async function untilJoined({ exec }: StartedExec): Promise<void> {
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    const state = await exec.inspect().catch(() => undefined);
    if (!state || (state.Pid ?? 0) > 0 || state.ExitCode !== null) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
