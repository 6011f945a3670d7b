import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CliError } from "./cli-error.js";
import type { GatewayLog } from "./gateway-log.js";

/** Beside the bundle in the image: /opt/agent-computer/share. */
const PTY_SERVER = fileURLToPath(new URL("../share/terminal-pty-server.py", import.meta.url));
/**
 * The name a uid without a passwd entry gets in its own terminals (the
 * image's user is called this too), through nss_wrapper: never in /etc/passwd.
 */
export const TERMINAL_USER_NAME = "computer";
const START_TIMEOUT_MS = 10_000;
/** The server hangs up its shells and waits up to 2 s for them; then it is killed. */
const STOP_GRACE_MS = 4000;
const STDERR_TAIL = 2000;

/** The control session a PTY server belongs to, and where its shells start. */
export interface TerminalSession {
  /** The control capability's id: one server per control capability. */
  readonly controlId: string;
  readonly bot: string;
  readonly home: string;
  /** The shells' `DISPLAY` (`:N`); none where the shells run apart from the display (terminal-host.ts). */
  readonly display?: string;
}

/**
 * Where the gateway's terminal connections go: PTY servers beside it
 * (`TerminalServers`), or the computer's terminal host when the display
 * runs apart from the bot's processes (`RemoteTerminals`).
 */
export interface TerminalBackend {
  /** At gateway start: forget what an earlier gateway left. */
  prepare(): void;
  /** Control ids with a server of their own running or stopping here. */
  controlIds(): string[];
  /** Resolves once the session's connections can be served: a grant fails here, not at its first connection. */
  ready(session: TerminalSession): Promise<void>;
  /** A connection to a new shell of the session, speaking terminal-pty-server.py's framing. */
  connect(session: TerminalSession): Promise<Socket>;
  /** Hangs up the session's shells. Idempotent. */
  stop(controlId: string): Promise<void>;
  /** Waits for every stop under way. */
  settle(): Promise<void>;
}

interface PtyServer {
  readonly dir: string;
  readonly socketPath: string;
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  done: boolean;
  stopping?: Promise<void>;
}

/**
 * The PTY servers beside the gateway (terminal-pty-server.py): one per
 * control capability with terminals, started on the first terminal grant,
 * run as the gateway's (the computer's) user, each with a 0700 session
 * folder under `<state>/gateway/terminals/<control id>` that goes when it
 * stops. Its stdin is a pipe from the gateway, so a gateway that dies takes
 * its servers (and their shells) with it.
 */
export class TerminalServers implements TerminalBackend {
  private readonly servers = new Map<string, PtyServer>();
  private readonly stops = new Set<Promise<void>>();

  constructor(
    readonly dir: string,
    private readonly log: GatewayLog,
  ) {}

  /** At gateway start: session folders of an earlier gateway's servers are stale. */
  prepare(): void {
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
  }

  /** Control ids with a server running or stopping. */
  controlIds(): string[] {
    return [...this.servers.keys()];
  }

  async ready(session: TerminalSession): Promise<void> {
    await this.socketFor(session);
  }

  async connect(session: TerminalSession): Promise<Socket> {
    return createConnection({ path: await this.socketFor(session) });
  }

  /** The socket of the session's server, started when none runs (or the last one died). */
  private async socketFor(session: TerminalSession): Promise<string> {
    let server = this.servers.get(session.controlId);
    if (server?.stopping) await server.stopping;
    server = this.servers.get(session.controlId);
    if (!server || server.done) {
      server = this.start(session);
      this.servers.set(session.controlId, server);
    }
    await server.ready;
    return server.socketPath;
  }

  /** Stops the control session's server: its shells are hung up, its session folder removed. Idempotent. */
  stop(controlId: string): Promise<void> {
    const server = this.servers.get(controlId);
    if (!server) return Promise.resolve();
    if (!server.stopping) {
      const stopping = this.stopServer(controlId, server).finally(() => this.stops.delete(stopping));
      server.stopping = stopping;
      this.stops.add(stopping);
    }
    return server.stopping;
  }

  /** Waits for every stop under way. */
  async settle(): Promise<void> {
    await Promise.all([...this.stops]);
  }

  private async stopServer(controlId: string, server: PtyServer): Promise<void> {
    const gone = (ms: number) =>
      Promise.race([server.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
    if (!server.done) {
      server.child.kill("SIGTERM");
      if (!(await gone(STOP_GRACE_MS))) {
        server.child.kill("SIGKILL");
        await gone(2000);
      }
    }
    rmSync(server.dir, { recursive: true, force: true });
    if (this.servers.get(controlId) === server) this.servers.delete(controlId);
    this.log.write("terminal-server-stopped", { control: controlId, pid: server.child.pid, gone: server.done });
  }

  private start(session: TerminalSession): PtyServer {
    const dir = join(this.dir, session.controlId);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const socketPath = join(dir, "pty.sock");
    const { AGENT_COMPUTER_EXEC: _marker, ...env } = process.env;
    const child = spawn(
      "python3",
      [
        // Isolated: no user site (a `.pth` the bot drops in the home runs nothing here).
        "-I",
        PTY_SERVER,
        "--socket",
        socketPath,
        "--session",
        dir,
        "--home",
        session.home,
        "--bot",
        session.bot,
        ...(session.display === undefined ? [] : ["--display", session.display]),
        "--user-name",
        TERMINAL_USER_NAME,
      ],
      { stdio: ["pipe", "pipe", "pipe"], env },
    );
    let stderr = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
    });
    // The pipe is the server's lifeline; writing to it is never needed.
    child.stdin?.on("error", () => {});
    let server: PtyServer;
    const exited = new Promise<void>((resolve) => {
      child.once("close", (code, signal) => {
        server.done = true;
        if (this.servers.get(session.controlId) === server && !server.stopping) {
          // Died on its own: its session folder goes; the next connection starts another.
          rmSync(dir, { recursive: true, force: true });
          this.servers.delete(session.controlId);
        }
        this.log.write("terminal-server-exit", {
          control: session.controlId,
          pid: child.pid,
          code: code ?? undefined,
          signal: signal ?? undefined,
        });
        resolve();
      });
    });
    const ready = new Promise<void>((resolve, reject) => {
      let out = "";
      const fail = (why: string) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(new CliError("UNAVAILABLE", `The terminal server did not start: ${why}`));
      };
      const timer = setTimeout(() => fail("it did not answer within 10 s."), START_TIMEOUT_MS);
      child.once("error", (error) =>
        fail(
          (error as NodeJS.ErrnoException).code === "ENOENT"
            ? "python3 is not installed in this computer."
            : error.message,
        ),
      );
      child.stdout?.setEncoding("utf8");
      child.stdout?.on("data", (chunk: string) => {
        out += chunk;
        const line = out.split("\n")[0];
        if (!out.includes("\n") || line === undefined) return;
        clearTimeout(timer);
        try {
          const said = JSON.parse(line) as { ready?: boolean; nss?: boolean };
          if (said.ready !== true) throw new Error("no ready line");
          this.log.write("terminal-server", { control: session.controlId, pid: child.pid, nss: said.nss === true });
          resolve();
        } catch {
          fail("it printed no ready line.");
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(
          new CliError(
            "UNAVAILABLE",
            `The terminal server exited: ${stderr.trim().split("\n").slice(-2).join(" ").slice(0, 400) || "(no output)"}`,
          ),
        );
      });
    });
    // A start nobody waits for (a connection that went away) must not be an unhandled rejection.
    ready.catch(() => {});
    server = { dir, socketPath, child, ready, exited, done: false };
    return server;
  }
}
