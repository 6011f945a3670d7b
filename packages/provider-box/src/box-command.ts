import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import type { BoxClient, BoxCommandResult } from "./box-client.js";

/** What running a command in a box needs from its machine. */
export interface BoxCommandHost {
  readonly client: BoxClient;
  readonly boxId: string;
  /** A synchronous command through the commands API (`sh -c <line>` in the box). */
  sync(line: string, signal: AbortSignal, timeoutSeconds?: number): Promise<BoxCommandResult>;
}

export interface BoxCommand extends MachineCommand {
  signal: AbortSignal;
}

/** Raw bytes per files-API write of staged input (its JSON body is a third larger). */
export const STAGE_PART_BYTES = 8 * 1024 * 1024;
/** Raw bytes of one stream a poll reads (base64 keeps the answer under the service's cut). */
const POLL_CHUNK = 256 * 1024;
/** How long one poll waits inside the box for output or the end. */
const POLL_WAIT_MS = 1_000;
/** How long a finished command's folder stays for a repeated final poll (longer than a retried call lasts). */
const KEEP_DONE_SECONDS = 300;
/** Where each command keeps its output, exit code and staged stdin inside the box. */
const EXEC_ROOT = "/tmp/.agent-computer-exec";

/**
 * Runs each command detached, under this wrapper: the program in its own
 * session (so process group), stdout and stderr into files, the exit code
 * written last (atomically) once the program ends; 126 when the working
 * directory cannot be entered, 127 when the program is missing. The
 * command's environment (with the kill marker) arrives as base64 JSON so
 * the wrapper itself does not carry the marker and survives the kill to
 * record the exit.
 *
 * argv: <dir> <working dir> <stdin 0|1> <env b64 json> <program> [args...]
 */
const WRAPPER = String.raw`import base64, json, os, subprocess, sys
d, cwd, with_stdin, env_b64 = sys.argv[1:5]
argv = sys.argv[5:]
env = dict(os.environ)
env.update(json.loads(base64.b64decode(env_b64)))
out = open(d + "/out", "wb")
err = open(d + "/err", "wb")
def finish(code):
    with open(d + "/exit.tmp", "w") as f:
        f.write(str(code))
    os.rename(d + "/exit.tmp", d + "/exit")
    os._exit(0)
try:
    os.chdir(cwd)
except OSError as e:
    err.write(("cannot enter %s: %s\n" % (cwd, e.strerror)).encode()); err.flush()
    finish(126)
try:
    p = subprocess.Popen(argv, stdin=open(d + "/stdin", "rb") if with_stdin == "1" else subprocess.DEVNULL, stdout=out, stderr=err, env=env, start_new_session=True)
except OSError as e:
    err.write(("%s: %s\n" % (argv[0], e.strerror)).encode()); err.flush()
    finish(127 if isinstance(e, FileNotFoundError) else 126)
with open(d + "/pgid", "w") as f:
    f.write(str(p.pid))
c = p.wait()
out.close(); err.close()
finish(c if c >= 0 else 128 - c)`;

/**
 * One poll: waits up to <wait ms> for the exit file or new output, then
 * prints one JSON line with the new bytes of each stream (base64, at most
 * <limit> each from <offset>), the streams' sizes, the exit code when
 * written, and whether the wrapper still lives. Once the exit is known and
 * every stream read is drained, the folder is marked done but kept: the
 * poll's answer may be lost and the call retried (the client retries for up
 * to `retryMs`, 60 s by default, each try up to `requestTimeoutMs`), and the
 * retry must find the same answer. Folders done for longer than
 * KEEP_DONE_S are removed by any later final poll.
 *
 * argv: <dir> <out offset> <err offset> <out limit> <err limit> <wait ms>
 */
const POLLER = `import base64, json, os, shutil, sys, time
KEEP_DONE_S = ${KEEP_DONE_SECONDS}
d = sys.argv[1]
off = [int(sys.argv[2]), int(sys.argv[3])]
lim = [int(sys.argv[4]), int(sys.argv[5])]
until = time.time() + int(sys.argv[6]) / 1000.0
def size(name):
    try:
        return os.path.getsize(d + "/" + name)
    except OSError:
        return 0
def exitcode():
    try:
        with open(d + "/exit") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None
def alive():
    try:
        with open(d + "/pid") as f:
            return os.path.exists("/proc/" + f.read().strip())
    except OSError:
        return None
while True:
    # Alive first: the supervisor writes the exit file before it ends, so one
    # seen gone here has its exit file read below (read after, a command
    # ending between the two reads looked lost).
    a = alive()
    x = exitcode()
    sizes = [size("out"), size("err")]
    if x is not None or any(l > 0 and s > o for s, o, l in zip(sizes, off, lim)) or time.time() >= until:
        break
    time.sleep(0.02)
chunks = []
drained = True
for name, o, l, s in zip(("out", "err"), off, lim, sizes):
    data = b""
    if l > 0 and s > o:
        with open(d + "/" + name, "rb") as f:
            f.seek(o)
            data = f.read(min(l, s - o))
    if l > 0 and o + len(data) < s:
        drained = False
    chunks.append(base64.b64encode(data).decode("ascii"))
if x is not None and drained:
    open(d + "/done", "w").close()
    root = os.path.dirname(d)
    for name in os.listdir(root):
        try:
            if time.time() - os.path.getmtime(root + "/" + name + "/done") > KEEP_DONE_S:
                shutil.rmtree(root + "/" + name, ignore_errors=True)
        except OSError:
            pass
print(json.dumps({"o": chunks[0], "e": chunks[1], "os": sizes[0], "es": sizes[1], "x": x, "alive": a}))`;

interface PollAnswer {
  o: string;
  e: string;
  os: number;
  es: number;
  x: number | null;
  alive: boolean | null;
}

/**
 * Runs `command` in the box through the commands API, which returns whole,
 * possibly truncated text and has no stdin (docs/architecture.md §9): stdin
 * is staged to a file through the files API, the command starts detached
 * under the wrapper, and its output is polled from files in byte ranges as
 * base64, so every byte arrives exactly and a cut of the service's answer
 * only shrinks the next range. Output past the cap is not fetched (unless
 * a listener wants it) and the result says `truncated`. A timeout or an
 * abort SIGKILLs the command's process tree (found by its marker) and its
 * process group.
 */
export async function runBoxCommand(host: BoxCommandHost, command: BoxCommand): Promise<ExecResult> {
  const signal = command.signal;
  const dir = `${EXEC_ROOT}/${randomBytes(8).toString("hex")}`;
  const running = new RunningCommand(command, (argv) =>
    host
      .sync(
        `${argv.map(shellQuote).join(" ")}; kill -KILL -- -"$(cat ${dir}/pgid 2>/dev/null)" 2>/dev/null; true`,
        AbortSignal.timeout(30_000),
        30,
      )
      .then(() => undefined),
  );
  const withStdin = command.stdin !== undefined;
  // The marker stays in the program's environment only (see WRAPPER).
  const env = Object.fromEntries(
    running.env.map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  );
  if (withStdin) {
    await stageBytes(host, `${dir}/stdin`, await bytesOf(command.stdin as Uint8Array | Readable), signal);
  }
  const line = [
    // Started once however often the request is retried: the first start claims the folder (noclobber).
    `mkdir -p ${dir} && (set -C; : > ${dir}/claimed) 2>/dev/null || exit 0; echo $$ > ${dir}/pid && exec python3 -c`,
    shellQuote(WRAPPER),
    dir,
    shellQuote(command.workingDir),
    withStdin ? "1" : "0",
    Buffer.from(JSON.stringify(env)).toString("base64"),
    ...command.argv.map(shellQuote),
  ].join(" ");
  let processId: string;
  try {
    processId = await host.client.detach(host.boxId, { command: line, cwd: "/" }, signal);
  } catch (error) {
    // The start may have reached the box with its answer lost: nothing of it may go on running.
    await running.kill().catch(() => {});
    void removeLater(host, dir);
    throw error;
  }
  running.startTimeout();

  const offsets = { stdout: 0, stderr: 0 };
  const wantsAll = command.onOutput !== undefined;
  const limitOf = (stream: "stdout" | "stderr", chunk: number) =>
    wantsAll ? chunk : Math.max(0, Math.min(chunk, command.maxOutputBytes - offsets[stream]));
  let chunk = POLL_CHUNK;
  let finalSizes: { stdout: number; stderr: number } | undefined;
  let missingSince: number | undefined;
  let exitCode: number | null = null;
  try {
    for (;;) {
      const limits = { stdout: limitOf("stdout", chunk), stderr: limitOf("stderr", chunk) };
      const drained =
        finalSizes !== undefined &&
        (limits.stdout === 0 || offsets.stdout >= finalSizes.stdout) &&
        (limits.stderr === 0 || offsets.stderr >= finalSizes.stderr);
      if (drained && finalSizes) {
        // Output nobody fetched (past the cap) still happened: the result says so.
        if (finalSizes.stdout > offsets.stdout) running.keep("stdout", new Uint8Array(1));
        if (finalSizes.stderr > offsets.stderr) running.keep("stderr", new Uint8Array(1));
        await running.settleTimeout();
        return running.result(exitCode);
      }
      const poll = host.sync(
        [
          "python3",
          "-c",
          POLLER,
          dir,
          offsets.stdout,
          offsets.stderr,
          limits.stdout,
          limits.stderr,
          finalSizes ? 0 : POLL_WAIT_MS,
        ]
          .map((word) => shellQuote(String(word)))
          .join(" "),
        signal,
        60,
      );
      poll.catch(() => {});
      const outcome = await Promise.race([poll, running.aborted]);
      if (outcome === "aborted") {
        await running.kill().catch(() => {});
        void removeLater(host, dir);
        throw running.abortError();
      }
      if (outcome.stdoutTruncated) {
        // The service cut the answer: the same ranges again, smaller.
        chunk = Math.max(4096, Math.floor(chunk / 2));
        continue;
      }
      const answer = parsePoll(outcome, host);
      const out = Buffer.from(answer.o, "base64");
      const err = Buffer.from(answer.e, "base64");
      for (const [stream, bytes] of [
        ["stdout", out],
        ["stderr", err],
      ] as const) {
        if (bytes.length === 0) continue;
        offsets[stream] += bytes.length;
        running.received(stream, bytes);
        running.keep(stream, bytes);
      }
      if (answer.x !== null && finalSizes === undefined) {
        finalSizes = { stdout: answer.os, stderr: answer.es };
        exitCode = answer.x;
      }
      if (answer.x === null && answer.alive !== true) {
        // No pid yet (the detached start has not run) or the wrapper died without an exit code.
        missingSince ??= Date.now();
        if (answer.alive === false || Date.now() - missingSince > 30_000) {
          const status = await host.client.commandStatus(host.boxId, processId, 2048, signal).catch(() => undefined);
          if (status?.status === "running" && answer.alive !== false) continue;
          if (answer.alive === false || status?.status !== "running") {
            await running.kill().catch(() => {});
            void removeLater(host, dir);
            throw new AgentComputerError(
              "UNAVAILABLE",
              `The command's supervisor in the box ended without an exit code${status?.exitCode != null ? ` (it exited ${status.exitCode})` : ""}; the command was killed. Run it again.`,
            );
          }
        }
      } else {
        missingSince = undefined;
      }
    }
  } finally {
    running.finish();
  }
}

function parsePoll(result: BoxCommandResult, host: BoxCommandHost): PollAnswer {
  const line = result.stdout.trim().split("\n").pop() ?? "";
  try {
    const answer = JSON.parse(line) as PollAnswer;
    if (typeof answer.o === "string" && typeof answer.e === "string") return answer;
  } catch {}
  throw new AgentComputerError(
    "UNAVAILABLE",
    `Following a command in the box failed (exit ${result.exitCode}): ${host.client.redact(result.stderr.slice(0, 300)) || "no output"}.`,
  );
}

/**
 * Puts `bytes` at `path` in the box through the files API: one write, or
 * parts joined in the box when larger than one part (writes of parts run
 * two at a time).
 */
export async function stageBytes(host: BoxCommandHost, path: string, bytes: Uint8Array, signal: AbortSignal) {
  if (bytes.length <= STAGE_PART_BYTES) {
    await host.client.writeFile(host.boxId, path, bytes, signal);
    return;
  }
  const parts: number[] = [];
  for (let offset = 0; offset < bytes.length; offset += STAGE_PART_BYTES) parts.push(offset);
  let next = 0;
  const worker = async () => {
    while (next < parts.length) {
      const index = next++;
      const offset = parts[index] as number;
      await host.client.writeFile(
        host.boxId,
        `${path}.part-${String(index).padStart(6, "0")}`,
        bytes.subarray(offset, offset + STAGE_PART_BYTES),
        signal,
      );
    }
  };
  await Promise.all([worker(), worker()]);
  const joined = await host.sync(
    `cat "$0".part-* > "$0" && rm -f "$0".part-*`.replaceAll("$0", shellQuote(path)),
    signal,
    300,
  );
  if (joined.exitCode !== 0) {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The box could not join staged input (exit ${joined.exitCode}): ${host.client.redact(joined.stderr.slice(0, 300))}`,
    );
  }
}

async function bytesOf(input: Uint8Array | Readable): Promise<Uint8Array> {
  if (input instanceof Uint8Array) return input;
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

function removeLater(host: BoxCommandHost, dir: string): Promise<void> {
  return host
    .sync(`rm -rf -- ${dir}`, AbortSignal.timeout(30_000), 30)
    .then(() => undefined)
    .catch(() => undefined);
}

/** Quotes one word for sh. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
