import { posix } from "node:path";
import {
  type ComputerContainers,
  collectCapped,
  demuxEngineStream,
  untilEnded,
} from "@agent-computer/testing/emulator";
import { DetachedRecord, fail, SANDBOX_USER, type SandboxRecord, WORK_DIRECTORY } from "./boat-sandboxes.js";

type Json = Record<string, unknown>;

/** What a sync command's stdout and stderr are each cut to (the service cuts too: `stdoutTruncated`; its size is not stated). */
export const SYNC_OUTPUT_CAP = 1024 * 1024;
/** CommandStatusResponse: `tailBytes` defaults to 8 MiB. */
const DEFAULT_TAIL_BYTES = 8 * 1024 * 1024;

/**
 * The commands and files of a running sandbox, as boat-v1.yaml states
 * them: op:command (synchronous or detached; `cwd` relative to the work
 * directory; `timeoutSeconds` 1..600, default 30), op:commandStatus
 * (integer process ids, `running`, log tails), op:readFile and
 * op:writeFile (paths resolved from /home/user, only under /home/user or
 * /tmp: else 400 `invalid_path`). The shell is not stated: bash, as
 * `setupScript` runs.
 */
export class SandboxCommands {
  constructor(
    private readonly containers: ComputerContainers,
    private readonly syncOutputCap = SYNC_OUTPUT_CAP,
  ) {}

  /** Detached commands started, per sandbox id. */
  readonly detached = new Map<string, number>();

  async command(sandbox: SandboxRecord, containerId: string, body: Json): Promise<Json> {
    if (typeof body.command !== "string" || body.command === "")
      throw fail(400, "invalid_request", "command is required");
    const timeout = body.timeoutSeconds ?? 30;
    if (!Number.isInteger(timeout) || (timeout as number) < 1 || (timeout as number) > 600) {
      throw fail(400, "invalid_timeout", "timeoutSeconds must be an integer from 1 to 600");
    }
    const cwd = posix.resolve(WORK_DIRECTORY, typeof body.cwd === "string" ? body.cwd.replace(/^\/+/, "") : ".");
    const options = { user: SANDBOX_USER, workingDir: cwd };
    sandbox.touch();
    if (body.detached === true) return this.detach(sandbox, containerId, body.command, options);
    const seconds = timeout as number;
    const startedAt = new Date();
    const argv = ["timeout", "-s", "KILL", String(seconds), "bash", "-c", body.command];
    const started = await this.containers.startCommand(containerId, argv, options);
    const { exitCode, stdout, stderr, sizes } = await collectCapped(started, this.syncOutputCap);
    const timedOut = exitCode === 137 && Date.now() - startedAt.getTime() >= seconds * 1000;
    return {
      type: "command.finished",
      success: exitCode === 0,
      exitCode: timedOut ? null : exitCode,
      signal: timedOut ? "SIGKILL" : null,
      oomKilled: false,
      stdout: stdout.toString("utf8"),
      stderr: stderr.toString("utf8"),
      stdoutTruncated: sizes.stdout > this.syncOutputCap,
      stderrTruncated: sizes.stderr > this.syncOutputCap,
      timedOut,
      cwd,
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
    };
  }

  private async detach(
    sandbox: SandboxRecord,
    containerId: string,
    line: string,
    options: { user: string; workingDir: string },
  ): Promise<Json> {
    const { exec, stream } = await this.containers.startCommand(containerId, ["bash", "-c", line], options);
    const processId = sandbox.takeProcessId();
    const record = new DetachedRecord(processId, 1000 + processId, line, options.workingDir);
    demuxEngineStream(
      stream,
      (chunk) => (record.stdout = Buffer.concat([record.stdout, chunk])),
      (chunk) => (record.stderr = Buffer.concat([record.stderr, chunk])),
    );
    void untilEnded(stream)
      .then(() => exec.inspect())
      .then((info) => (record.exitCode = info.ExitCode ?? null))
      .catch(() => {})
      .finally(() => Object.assign(record, { status: "exited", finishedAt: new Date().toISOString() }));
    sandbox.commands.set(processId, record);
    this.detached.set(sandbox.id, (this.detached.get(sandbox.id) ?? 0) + 1);
    const logPath = `${WORK_DIRECTORY}/.ascii/processes/${record.pid}.log`;
    return {
      type: "command.started",
      success: true,
      processId,
      pid: record.pid,
      command: line,
      cwd: options.workingDir,
      startedAt: record.startedAt,
      logPath,
      errLogPath: logPath.replace(/\.log$/, ".err.log"),
    };
  }

  status(sandbox: SandboxRecord, processId: number, query: URLSearchParams): Json {
    const record = sandbox.commands.get(processId);
    if (!record) throw fail(404, "not_found", "no such process");
    const tail = Number(query.get("tailBytes") ?? DEFAULT_TAIL_BYTES);
    const last = (log: Buffer) => ({ text: log.subarray(-tail).toString("utf8"), cut: log.length > tail });
    const [stdout, stderr] = [last(record.stdout), last(record.stderr)];
    return {
      type: "command.status",
      success: true,
      processId,
      pid: record.pid,
      status: record.status,
      known: true,
      running: record.status === "running",
      exitCode: record.exitCode,
      signal: null,
      command: record.command,
      cwd: record.cwd,
      startedAt: record.startedAt,
      finishedAt: record.finishedAt,
      stdout: stdout.text,
      stderr: stderr.text,
      stdoutTruncated: stdout.cut,
      stderrTruncated: stderr.cut,
    };
  }

  async writeFile(containerId: string, body: Json): Promise<Json> {
    const path = allowedPath(body.path);
    if (typeof body.content !== "string") throw fail(400, "invalid_request", "content is required");
    const encoding = body.encoding === "base64" ? "base64" : "utf8";
    const input = Buffer.from(body.content, encoding);
    const argv = ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "write", path];
    const { exitCode } = await this.containers.run(containerId, argv, { user: SANDBOX_USER, input });
    if (exitCode !== 0) throw fail(400, "invalid_path", `could not write ${path}`);
    return { type: "file.written", success: true, path, encoding, size: input.length };
  }

  async readFile(containerId: string, query: URLSearchParams): Promise<Json> {
    const path = allowedPath(query.get("path"));
    const { exitCode, stdout } = await this.containers.run(containerId, ["cat", "--", path], { user: SANDBOX_USER });
    // The definition lists only 400 for op:readFile.
    if (exitCode !== 0) throw fail(400, "invalid_path", `could not read ${path}`);
    const encoding = query.get("encoding") === "base64" ? "base64" : "utf8";
    return {
      type: "file.read",
      success: true,
      path,
      encoding,
      size: stdout.length,
      content: stdout.toString(encoding),
    };
  }
}

/** A files API path: relative ones from the work directory; it must resolve under /home/user or /tmp. */
function allowedPath(path: unknown): string {
  if (typeof path !== "string" || path === "") throw fail(400, "invalid_path", "path is required");
  const resolved = posix.resolve(WORK_DIRECTORY, path);
  const under = (root: string) => resolved === root || resolved.startsWith(`${root}/`);
  if (!under(WORK_DIRECTORY) && !under("/tmp")) {
    throw fail(
      400,
      "invalid_path",
      `the path must resolve under ${WORK_DIRECTORY} or /tmp (work directory ${WORK_DIRECTORY})`,
    );
  }
  return resolved;
}
