import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { computerSeccompProfile } from "@agent-computer/desktop-runtime";
import {
  type ComputerContainers,
  type FenceRules,
  HttpAnswer,
  pipeStdout,
  readMultipart,
} from "@agent-computer/testing/emulator";
import { demuxLog } from "./daemon-scripts.js";
import { DaemonSession, SandboxDaemon } from "./daemon-session.js";
import type { EmulatedSandboxState } from "./daytona-emulator-options.js";
import { fenceRulesOf, type SandboxNetworkSettings } from "./daytona-network-fence.js";

/** Every container an emulator starts carries this label (its value: the emulator's id). */
export const EMULATOR_LABEL = "agent-computer.test/daytona-emulator";

/** What a sandbox's container is made with: the emulator's machines, user and network. */
export interface SandboxHost {
  containers: ComputerContainers;
  /** The uid:gid its processes run as. */
  user: string;
  network: string | undefined;
  /** Streams the emulator ends when it closes. */
  open: Set<Socket>;
  /** `name:address` lines for every container's /etc/hosts (public names standing in for DNS). */
  extraHosts: string[];
  /** Puts a running container's egress in force outside its reach (the kit's startFence); gives the fence's container. */
  fence(containerId: string, rules: FenceRules): Promise<string>;
}

/**
 * A sandbox as the emulator keeps it: what the API reports of it, the
 * container behind it (none while it is archived), and its toolbox: the
 * sessions and their commands, bulk upload and download.
 */
export class Sandbox {
  readonly id = randomUUID();
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly env: Record<string, string>;
  readonly public: boolean;
  /** Its network settings as created (daytona-network-fence.ts). */
  readonly network: SandboxNetworkSettings;
  /** What the runner enforces for them, or undefined: every address reachable. */
  private readonly egress?: FenceRules;
  /** The container of its network fence while its container runs. */
  private fenceId?: string;
  autoStopInterval: number;
  state: EmulatedSandboxState = "creating";
  /** Every state it entered, in order (tests check a path through the state machine). */
  readonly history: EmulatedSandboxState[] = [];
  errorReason?: string;
  readonly createdAt = new Date().toISOString();
  updatedAt = this.createdAt;
  lastActivityAt = this.createdAt;
  containerId?: string;
  /** The container's address while it runs (the preview proxy's target). */
  ip?: string;
  archiveImage?: string;
  readonly sessions = new Map<string, DaemonSession>();
  /** The toolbox daemon's stand-in while the container runs (started on the first session call). */
  private daemon?: Promise<SandboxDaemon>;
  /** The one state change under way: later ones wait for it. */
  transition = Promise.resolve();
  /** State changes asked for and not yet done: the API's `pending`. */
  pendingChanges = 0;
  /** The API's sandboxClass: "container" (the runner's Docker sandboxes) unless the emulator says otherwise. */
  sandboxClass: "container" | "linux-vm" = "container";

  get pending(): boolean {
    return this.pendingChanges > 0;
  }

  constructor(
    private readonly host: SandboxHost,
    readonly image: string,
    body: Record<string, unknown>,
    network: SandboxNetworkSettings = { networkBlockAll: false },
  ) {
    this.network = network;
    this.egress = fenceRulesOf(network);
    this.name = typeof body.name === "string" ? body.name : `sandbox-${randomBytes(3).toString("hex")}`;
    this.labels = (body.labels as Record<string, string>) ?? {};
    this.env = (body.env as Record<string, string>) ?? {};
    this.public = body.public === true;
    this.autoStopInterval = typeof body.autoStopInterval === "number" ? body.autoStopInterval : 15;
  }

  /** The sandbox user's HOME, where the toolbox daemon keeps its files (`.daytona`). */
  get home(): string {
    return this.env.HOME ?? "/home/computer";
  }

  // ---- the container ------------------------------------------------------

  /** Creates and starts the container (from the sandbox's image, or its archive). */
  async createContainer(image: string): Promise<void> {
    const machine = await this.host.containers.create({
      image,
      name: this.id.slice(0, 13),
      labels: { "agent-computer.test/daytona-sandbox": this.id },
      user: this.host.user,
      // The screen gateway admits the host's end of the container's network: where this proxy connects from.
      env: {
        ...this.env,
        HOME: this.home,
        LANG: "C.UTF-8",
        AGENT_COMPUTER_GATEWAY_SOURCES: "default-gateway",
      },
      network: this.host.network,
      extraHosts: this.host.extraHosts,
      // No shmBytes: the runner sets no ShmSize (apps/runner/pkg/docker/container_configs.go
      // getContainerHostConfig:200-256), so /dev/shm is Docker's default 64 MiB.
      seccompProfile: computerSeccompProfile(),
    });
    this.containerId = machine.id;
    this.ip = machine.ip;
    await this.fenceUp();
  }

  async startContainer(): Promise<void> {
    this.ip = await this.host.containers.start(this.containerId as string);
    await this.fenceUp();
  }

  /**
   * The runner keeps a sandbox's chain across stops and hooks it to the
   * container's address at each start (apps/runner/pkg/docker/monitor.go
   * l.148 AssignNetworkRules on the start event); a container's network
   * namespace is new at each start, so its fence is made again. The runner
   * installs the rules in a goroutine after the start (create.go l.242-256),
   * a window the emulator does not leave: the fence is up before the
   * sandbox is reported started.
   */
  private async fenceUp(): Promise<void> {
    if (!this.egress || !this.containerId) return;
    await this.fenceDown();
    this.fenceId = await this.host.fence(this.containerId, this.egress);
  }

  private async fenceDown(): Promise<void> {
    const fence = this.fenceId;
    this.fenceId = undefined;
    if (fence) await this.host.containers.remove(fence);
  }

  /** Pause: the container's processes frozen (the VM classes' pause, as near as a container gets). */
  async pauseContainer(): Promise<void> {
    await this.host.containers.pause(this.containerId as string);
  }

  async unpauseContainer(): Promise<void> {
    await this.host.containers.unpause(this.containerId as string);
  }

  /** Stops the container; its sessions end. */
  async stopContainer(): Promise<void> {
    this.abandonSessions();
    this.sessions.clear();
    await this.host.containers.stop(this.containerId as string);
    await this.fenceDown();
  }

  /** Archive: the container's filesystem becomes an image (the home with it) and the container goes. */
  async archiveContainer(): Promise<void> {
    this.archiveImage = await this.host.containers.archive(this.containerId as string, this.id);
    this.containerId = undefined;
    await this.fenceDown();
  }

  /** Removes the container and the archive. */
  async remove(): Promise<void> {
    this.abandonSessions();
    await this.fenceDown();
    if (this.containerId) await this.host.containers.remove(this.containerId);
    if (this.archiveImage) await this.host.containers.removeImage(this.archiveImage);
    this.containerId = undefined;
    this.archiveImage = undefined;
  }

  /** Drops every session without signalling its processes (the container stops or goes, or the emulator closes). */
  abandonSessions(): void {
    this.sessions.clear();
    const daemon = this.daemon;
    this.daemon = undefined;
    void daemon?.then((d) => d.close()).catch(() => {});
  }

  // ---- the toolbox ----------------------------------------------------------

  /** The daemon's stand-in in the running container, started once per run. */
  private daemonOf(): Promise<SandboxDaemon> {
    if (!this.daemon) {
      const { containers, user } = this.host;
      this.daemon = SandboxDaemon.start(containers, this.containerId as string, user);
      this.daemon.catch(() => {
        this.daemon = undefined;
      });
    }
    return this.daemon;
  }

  /**
   * A session call under `/toolbox/<id>/process/session` (`path` decoded), as
   * the daemon answers it (apps/daemon/pkg/toolbox/process/session): the
   * answer's status and body.
   */
  async toolbox(method: string, path: string, body: unknown): Promise<{ status: number; body?: unknown }> {
    const request = (body ?? {}) as Record<string, unknown>;
    const on = (verb: string, pattern: RegExp) => (method === verb ? pattern.exec(path) : null);
    if (path === "process/session" && method === "POST") {
      // session.go CreateSession: 201, no body; create.go:39-42 a second one is 409.
      const sessionId = String(request.sessionId);
      if (this.sessions.has(sessionId)) throw new HttpAnswer(409, "session already exists");
      this.sessions.set(sessionId, await DaemonSession.open(await this.daemonOf(), this.home, sessionId));
      return { status: 201 };
    }
    const deleted = on("DELETE", /^process\/session\/([^/]+)$/);
    if (deleted) {
      // session.go DeleteSession: 204 once its processes are ended and its folder removed.
      const session = this.session(deleted[1] as string);
      await session.delete();
      this.sessions.delete(session.id);
      return { status: 204 };
    }
    const execute = on("POST", /^process\/session\/([^/]+)\/exec$/);
    if (execute) {
      // execute.go SessionExecuteCommand: 202 with the id when async, else 200 with the output.
      const session = this.session(execute[1] as string);
      const runAsync = request.runAsync === true || request.async === true;
      const { command, log } = await session.execute(
        String(request.command),
        runAsync,
        request.suppressInputEcho === true,
      );
      if (runAsync || !log) return { status: 202, body: { cmdId: command.id } };
      return { status: 200, body: { cmdId: command.id, exitCode: command.exitCode, ...logAnswer(log) } };
    }
    const [, sessionId, commandId, action] =
      /^process\/session\/([^/]+)\/command\/([^/]+)(?:\/(logs|input))?$/.exec(path) ?? [];
    if (sessionId && commandId && method === (action === "input" ? "POST" : "GET")) {
      const session = this.session(sessionId);
      const command = session.command(commandId);
      if (action === undefined) {
        // session.go GetSessionCommand: the exit code once the file holds one.
        const exitCode = await session.exitCodeOf(command);
        return { status: 200, body: { id: command.id, command: command.command, exitCode } };
      }
      // log.go GetSessionCommandLogs: JSON with the streams apart for an SDK >= 0.167 (common.go SkipServerDemux).
      if (action === "logs") return { status: 200, body: logAnswer(await session.logOf(command)) };
      await session.sendInput(command, String(request.data ?? ""));
      return { status: 204 };
    }
    throw new HttpAnswer(404, `no toolbox route ${method} ${path}`);
  }

  /** A session, or the daemon's 404 (session not found). */
  session(sessionId: string): DaemonSession {
    const session = this.sessions.get(sessionId);
    if (!session) throw new HttpAnswer(404, "session not found");
    return session;
  }

  /** Bulk upload: each file part streams into the sandbox through `cat` as its user. */
  async upload(req: IncomingMessage): Promise<void> {
    await readMultipart(req, req.headers["content-type"] ?? "", async (part) => {
      const index = /^files\[(\d+)\]\.file$/.exec(part.name)?.[1];
      const path = index === undefined ? undefined : part.fields[`files[${index}].path`];
      if (!path) {
        part.body.resume();
        throw new HttpAnswer(400, `upload part ${part.name} has no path`);
      }
      const argv = ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "upload", path];
      const id = this.containerId as string;
      const { exitCode } = await this.host.containers.run(id, argv, { user: this.host.user, input: part.body });
      if (exitCode !== 0) throw new HttpAnswer(400, `could not write ${path} (exit ${exitCode})`);
    });
  }

  /** Bulk download: one multipart part per path, its bytes streamed from `cat` in the sandbox. */
  async download(body: { paths?: string[] }, res: ServerResponse): Promise<void> {
    const id = this.containerId as string;
    const boundary = `emulator-${randomBytes(8).toString("hex")}`;
    const partHead = (name: string, path: string, type: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${path}"\r\nContent-Type: ${type}\r\n\r\n`;
    res.writeHead(200, { "content-type": `multipart/form-data; boundary=${boundary}` });
    for (const path of body.paths ?? []) {
      let opened = false;
      const open = () => {
        if (!opened) res.write(partHead("file", path, "application/octet-stream"));
        opened = true;
      };
      const cat = await pipeStdout(this.host.containers, id, ["cat", "--", path], { user: this.host.user }, res, open);
      if (cat.exitCode === 0) {
        open();
        res.write("\r\n");
      } else if (!opened) {
        const message = JSON.stringify({ message: cat.stderr.toString("utf8").trim(), statusCode: 404 });
        res.write(`${partHead("error", path, "application/json")}${message}\r\n`);
      } else {
        res.destroy();
        return;
      }
    }
    res.end(`--${boundary}--\r\n`);
  }
}

/** A command's log as the daemon answers it: the labelled text and each stream (log.go:55-62, execute.go DemuxLogBytes). */
function logAnswer(log: Buffer): { output: string; stdout: string; stderr: string } {
  const { stdout, stderr } = demuxLog(log);
  return { output: log.toString("utf8"), stdout: stdout.toString("utf8"), stderr: stderr.toString("utf8") };
}
