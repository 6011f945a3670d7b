import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import {
  type ComputerContainers,
  HttpAnswer,
  type KeptCommand,
  pipeStdout,
  readMultipart,
  startKept,
} from "@agent-computer/testing/emulator";
import type { EmulatedSandboxState } from "./daytona-emulator-options.js";

/** Every container an emulator starts carries this label (its value: the emulator's id). */
export const EMULATOR_LABEL = "agent-computer.test/daytona-emulator";

/** A session command: its output kept, as the toolbox's daemon keeps it. */
export type SessionCommand = KeptCommand & { id: string; command: string };

/** What a sandbox's container is made with: the emulator's machines, user and network. */
export interface SandboxHost {
  containers: ComputerContainers;
  /** The uid:gid its processes run as. */
  user: string;
  network: string | undefined;
  /** Streams the emulator ends when it closes. */
  open: Set<Socket>;
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
  autoStopInterval: number;
  state: EmulatedSandboxState = "creating";
  errorReason?: string;
  readonly createdAt = new Date().toISOString();
  updatedAt = this.createdAt;
  lastActivityAt = this.createdAt;
  containerId?: string;
  /** The container's address while it runs (the preview proxy's target). */
  ip?: string;
  archiveImage?: string;
  readonly sessions = new Map<string, Map<string, SessionCommand>>();
  /** The one state change under way: later ones wait for it. */
  transition = Promise.resolve();

  constructor(
    private readonly host: SandboxHost,
    readonly image: string,
    body: Record<string, unknown>,
  ) {
    this.name = typeof body.name === "string" ? body.name : `sandbox-${randomBytes(3).toString("hex")}`;
    this.labels = (body.labels as Record<string, string>) ?? {};
    this.env = (body.env as Record<string, string>) ?? {};
    this.public = body.public === true;
    this.autoStopInterval = typeof body.autoStopInterval === "number" ? body.autoStopInterval : 15;
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
        HOME: this.env.HOME ?? "/home/computer",
        LANG: "C.UTF-8",
        AGENT_COMPUTER_GATEWAY_SOURCES: "default-gateway",
      },
      network: this.host.network,
      shmBytes: COMPUTER_SHM_BYTES,
      seccompProfile: computerSeccompProfile(),
    });
    this.containerId = machine.id;
    this.ip = machine.ip;
  }

  async startContainer(): Promise<void> {
    this.ip = await this.host.containers.start(this.containerId as string);
  }

  /** Stops the container; its sessions end. */
  async stopContainer(): Promise<void> {
    this.endCommands();
    this.sessions.clear();
    await this.host.containers.stop(this.containerId as string);
  }

  /** Archive: the container's filesystem becomes an image (the home with it) and the container goes. */
  async archiveContainer(): Promise<void> {
    this.archiveImage = await this.host.containers.archive(this.containerId as string, this.id);
    this.containerId = undefined;
  }

  /** Removes the container and the archive. */
  async remove(): Promise<void> {
    this.endCommands();
    if (this.containerId) await this.host.containers.remove(this.containerId);
    if (this.archiveImage) await this.host.containers.removeImage(this.archiveImage);
    this.containerId = undefined;
    this.archiveImage = undefined;
  }

  private endCommands(): void {
    for (const commands of this.sessions.values()) for (const c of commands.values()) c.stdin?.destroy();
  }

  // ---- the toolbox ----------------------------------------------------------

  /** A toolbox call under `/toolbox/<id>/` (`path` decoded): its answer's body, undefined for none. */
  async toolbox(method: string, path: string, body: unknown): Promise<unknown> {
    const request = (body ?? {}) as Record<string, unknown>;
    const on = (verb: string, pattern: RegExp) => (method === verb ? pattern.exec(path) : null);
    if (path === "process/session" && method === "POST") {
      const sessionId = String(request.sessionId);
      if (this.sessions.has(sessionId)) throw new HttpAnswer(409, "session already exists");
      this.sessions.set(sessionId, new Map());
      return undefined;
    }
    const deleted = on("DELETE", /^process\/session\/([^/]+)$/);
    if (deleted) {
      if (!this.sessions.delete(deleted[1] as string)) throw new HttpAnswer(404, "session not found");
      return undefined;
    }
    const execute = on("POST", /^process\/session\/([^/]+)\/exec$/);
    if (execute) {
      const session = this.session(execute[1] as string);
      const command = await this.exec(String(request.command));
      session.set(command.id, command);
      if (request.runAsync === true) return { cmdId: command.id };
      await command.done;
      return { cmdId: command.id, exitCode: command.exitCode, ...logsOf(command) };
    }
    // A command's status and its logs (GET), its input (POST).
    const [, sessionId, commandId, action] =
      /^process\/session\/([^/]+)\/command\/([^/]+)(?:\/(logs|input))?$/.exec(path) ?? [];
    const routed = sessionId && commandId && method === (action === "input" ? "POST" : "GET");
    const command = routed ? this.command(sessionId, commandId) : undefined;
    if (command && action === undefined)
      return { id: command.id, command: command.command, exitCode: command.exitCode };
    if (command && action === "logs") return logsOf(command);
    if (command) {
      const stdin = command.stdin;
      if (command.exitCode !== undefined || !stdin) throw new HttpAnswer(400, "command is not running");
      const data = String(request.data ?? "");
      await new Promise<void>((resolve, reject) => stdin.write(data, (error) => (error ? reject(error) : resolve())));
      return undefined;
    }
    throw new HttpAnswer(404, `no toolbox route ${method} ${path}`);
  }

  /** A session's command, or the toolbox's 404. */
  command(sessionId: string, commandId: string): SessionCommand {
    const command = this.session(sessionId).get(commandId);
    if (!command) throw new HttpAnswer(404, `command ${commandId} not found`);
    return command;
  }

  private session(sessionId: string): Map<string, SessionCommand> {
    const session = this.sessions.get(sessionId);
    if (!session) throw new HttpAnswer(404, `session ${sessionId} not found`);
    return session;
  }

  /** One session command: an exec in the container, its output kept for its log as the daemon keeps it. */
  private async exec(line: string): Promise<SessionCommand> {
    const { containers, user, open } = this.host;
    const argv = ["/bin/sh", "-c", line];
    const kept = await startKept(containers, this.containerId as string, argv, { user, workingDir: "/" }, open);
    return Object.assign(kept, { id: randomUUID(), command: line });
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

/** A chunk of a command's log as the toolbox sends it: after the SDK's stream marker, 01 01 01 or 02 02 02. */
export function labelled(stream: 1 | 2, chunk: Buffer): Buffer {
  return Buffer.concat([Buffer.alloc(3, stream), chunk]);
}

/** A command's output as the toolbox gives it: the labelled log and each stream. */
function logsOf(command: SessionCommand): { output: string; stdout: string; stderr: string } {
  const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString("utf8");
  const only = (stream: 1 | 2) => command.output.filter((o) => o.stream === stream).map((o) => o.chunk);
  return {
    output: text(command.output.map((o) => labelled(o.stream, o.chunk))),
    stdout: text(only(1)),
    stderr: text(only(2)),
  };
}
