import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import type { DetachedChannel, SyncAnswer, WakeOption } from "./detached-channel.js";
import { bytesOf, stageBytes } from "./file-parts.js";
import { shellQuote } from "./shell-quote.js";

/** A command to run over a detached channel. */
export interface DetachedCommand extends MachineCommand {
  /** Fires on the caller's abort or deadline; its reason is what is thrown. */
  signal: AbortSignal;
}

/** Raw bytes of one stream a poll reads (base64 keeps the answer under a service's cut). */
const POLL_CHUNK = 256 * 1024;
/** How long one poll waits inside the machine for output or the end. */
const POLL_WAIT_MS = 1_000;
/** How long a finished command's folder stays for a repeated final poll (longer than a retried call lasts). */
const KEEP_DONE_SECONDS = 300;
/** Where each command keeps its output, exit code and staged stdin inside the machine. */
const EXEC_ROOT = "/tmp/.agent-computer-exec";
/** Polls, kills and cleanup of a command: a machine stopped under them stays stopped (WakeOption). */
const ASLEEP_STAYS_ASLEEP: WakeOption = { wake: false };
/** How long a command may show neither a live supervisor nor an exit before the service is asked about it. */
const MISSING_GRACE_MS = 30_000;

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

type Stream = "stdout" | "stderr";

/**
 * Runs `command` over a channel that has no stream and no stdin
 * (docs/architecture.md §9): stdin is staged to a file through the files
 * API, the command starts detached under the wrapper, and its output is
 * polled from files in byte ranges as base64, so every byte arrives exactly
 * and a cut of the service's answer only shrinks the next range. Output
 * past the cap is not fetched (unless a listener wants it) and the result
 * says `truncated`. A timeout or an abort SIGKILLs the command's process
 * tree (found by its marker) and its process group.
 */
export async function runDetachedCommand(channel: DetachedChannel, command: DetachedCommand): Promise<ExecResult> {
  const signal = command.signal;
  const dir = `${EXEC_ROOT}/${randomBytes(8).toString("hex")}`;
  const running = new RunningCommand(command, (argv) =>
    channel
      .sync(
        `${argv.map(shellQuote).join(" ")}; kill -KILL -- -"$(cat ${dir}/pgid 2>/dev/null)" 2>/dev/null; true`,
        AbortSignal.timeout(30_000),
        30,
        ASLEEP_STAYS_ASLEEP,
      )
      .then(() => undefined),
  );
  const fail = async (error: unknown): Promise<never> => {
    await running.kill().catch(() => {});
    void removeLater(channel, dir);
    throw error;
  };
  const withStdin = command.stdin !== undefined;
  if (withStdin) {
    await stageBytes(channel, `${dir}/stdin`, await bytesOf(command.stdin as Uint8Array | Readable), signal);
  }
  let processId: string;
  try {
    processId = await channel.detach(startLine(dir, command, running.env, withStdin), signal);
  } catch (error) {
    // The start may have reached the machine with its answer lost: nothing of it may go on running.
    return fail(error);
  }
  running.startTimeout();
  const follower = new OutputFollower(command, running);
  let missingSince: number | undefined;
  try {
    for (;;) {
      const exitCode = follower.exitIfDrained();
      if (exitCode !== undefined) {
        await running.settleTimeout();
        return running.result(exitCode);
      }
      const poll = channel.sync(follower.pollLine(dir), signal, 60, ASLEEP_STAYS_ASLEEP);
      poll.catch(() => {});
      const outcome = await Promise.race([poll, running.aborted]);
      if (outcome === "aborted") {
        await running.kill().catch(() => {});
        void removeLater(channel, dir);
        return running.stopped();
      }
      if (outcome.stdoutTruncated) {
        follower.shrinkChunk();
        continue;
      }
      const answer = parsePoll(outcome, channel);
      follower.take(answer);
      if (answer.x !== null || answer.alive === true) {
        missingSince = undefined;
        continue;
      }
      // No pid yet (the detached start has not run) or the wrapper died without an exit code.
      missingSince ??= Date.now();
      if (answer.alive !== false && Date.now() - missingSince <= MISSING_GRACE_MS) continue;
      const state = await channel.processState(processId, signal).catch(() => undefined);
      if (state?.running && answer.alive !== false) continue;
      return fail(
        new AgentComputerError(
          "UNAVAILABLE",
          `The command's supervisor ended without an exit code${state?.exitCode != null ? ` (it exited ${state.exitCode})` : ""}; the command was killed. Run it again.`,
        ),
      );
    }
  } finally {
    running.finish();
  }
}

/** The detached start: started once however often the request is retried (the first start claims the folder). */
function startLine(dir: string, command: DetachedCommand, env: readonly string[], withStdin: boolean): string {
  // The marker stays in the program's environment only (see WRAPPER).
  const variables = Object.fromEntries(
    env.map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  );
  return [
    `mkdir -p ${dir} && (set -C; : > ${dir}/claimed) 2>/dev/null || exit 0; echo $$ > ${dir}/pid && exec python3 -c`,
    shellQuote(WRAPPER),
    dir,
    shellQuote(command.workingDir),
    withStdin ? "1" : "0",
    Buffer.from(JSON.stringify(variables)).toString("base64"),
    ...command.argv.map(shellQuote),
  ].join(" ");
}

/** Where the polls have got to in each stream, and the sizes they must reach once the command ended. */
class OutputFollower {
  private readonly offsets = { stdout: 0, stderr: 0 };
  private chunk = POLL_CHUNK;
  private finalSizes: { stdout: number; stderr: number } | undefined;
  private exitCode: number | null = null;

  constructor(
    private readonly command: DetachedCommand,
    private readonly running: RunningCommand,
  ) {}

  private limitOf(stream: Stream): number {
    if (this.command.onOutput !== undefined) return this.chunk;
    return Math.max(0, Math.min(this.chunk, this.command.maxOutputBytes - this.offsets[stream]));
  }

  /** The exit code once the command ended and every stream read is drained; undefined while not. */
  exitIfDrained(): number | null | undefined {
    const sizes = this.finalSizes;
    if (!sizes) return undefined;
    const drained = (stream: Stream) => this.limitOf(stream) === 0 || this.offsets[stream] >= sizes[stream];
    if (!drained("stdout") || !drained("stderr")) return undefined;
    // Output nobody fetched (past the cap) still happened: the result says so.
    for (const stream of ["stdout", "stderr"] as const) {
      if (sizes[stream] > this.offsets[stream]) this.running.keep(stream, new Uint8Array(1));
    }
    return this.exitCode;
  }

  pollLine(dir: string): string {
    const wait = this.finalSizes ? 0 : POLL_WAIT_MS;
    const words = [dir, this.offsets.stdout, this.offsets.stderr, this.limitOf("stdout"), this.limitOf("stderr"), wait];
    return ["python3", "-c", POLLER, ...words].map((word) => shellQuote(String(word))).join(" ");
  }

  /** The service cut the answer: the same ranges again, smaller. */
  shrinkChunk(): void {
    this.chunk = Math.max(4096, Math.floor(this.chunk / 2));
  }

  take(answer: PollAnswer): void {
    for (const [stream, encoded] of [
      ["stdout", answer.o],
      ["stderr", answer.e],
    ] as const) {
      const bytes = Buffer.from(encoded, "base64");
      if (bytes.length === 0) continue;
      this.offsets[stream] += bytes.length;
      this.running.received(stream, bytes);
      this.running.keep(stream, bytes);
    }
    if (answer.x !== null && this.finalSizes === undefined) {
      this.finalSizes = { stdout: answer.os, stderr: answer.es };
      this.exitCode = answer.x;
    }
  }
}

function parsePoll(result: SyncAnswer, channel: DetachedChannel): PollAnswer {
  const line = result.stdout.trim().split("\n").pop() ?? "";
  try {
    const answer = JSON.parse(line) as PollAnswer;
    if (typeof answer.o === "string" && typeof answer.e === "string") return answer;
  } catch {}
  throw new AgentComputerError(
    "UNAVAILABLE",
    `Following a command failed (exit ${result.exitCode}): ${channel.redact(result.stderr.slice(0, 300)) || "no output"}.`,
  );
}

function removeLater(channel: DetachedChannel, dir: string): Promise<void> {
  return channel
    .sync(`rm -rf -- ${dir}`, AbortSignal.timeout(30_000), 30, ASLEEP_STAYS_ASLEEP)
    .then(() => undefined)
    .catch(() => undefined);
}
