import { randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import type { Machine } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";

/** Where a copy's archive waits in the target home while it is unpacked (the runtime's own folder there). */
const STAGING_DIR = ".agent-computer";
/**
 * Longest one side of a copy may take. `tar` runs inside computers whose
 * bots may have changed them; one that never ends must not hold a mode
 * change (and both its computers' reservations, which heartbeat) forever.
 */
const COPY_STEP_TIMEOUT_MS = 30 * 60_000;

/**
 * Copies the folder `fromDir` of one machine's home into `toDir` of another
 * machine's home (made when missing), through `tar`: its stdout streams
 * into a file of the target home, which is then unpacked and removed, so
 * neither side holds the whole folder in memory. `exclude` names entries
 * directly under `fromDir` to leave out. Returns false, copying nothing,
 * when `fromDir` does not exist.
 */
export async function copyFolder(
  from: Machine,
  fromDir: string,
  to: Machine,
  toDir: string,
  exclude: readonly string[] = [],
): Promise<boolean> {
  if ((await from.exec({ argv: ["test", "-d", fromDir] })).exitCode !== 0) return false;
  const archive = `${STAGING_DIR}/copy-${randomUUID()}.tar`;
  const stream = new PassThrough();
  const written = to.files.write(archive, stream);
  // Awaited below; a pack that throws first must not leave its failure unhandled.
  written.catch(() => {});
  try {
    let packed: Awaited<ReturnType<Machine["exec"]>>;
    try {
      packed = await from.exec({
        argv: ["tar", "-cf", "-", ...exclude.map((name) => `--exclude=./${name}`), "-C", fromDir, "."],
        // The archive goes to the stream as it arrives; the result keeps only a byte of it.
        maxOutputBytes: 1,
        timeoutMs: COPY_STEP_TIMEOUT_MS,
        onOutput: (name, chunk) => {
          if (name === "stdout") stream.write(chunk);
        },
      });
    } finally {
      stream.end();
    }
    await written;
    if (packed.exitCode !== 0 || packed.timedOut) throw failed("pack", fromDir, packed.stderr);
    const unpacked = await to.exec({
      timeoutMs: COPY_STEP_TIMEOUT_MS,
      // --no-overwrite-dir: the target folder (a home's root) keeps its own owner and mode.
      argv: ["sh", "-c", 'mkdir -p -- "$1" && tar -xf "$2" --no-overwrite-dir -C "$1"', "copy-folder", toDir, archive],
    });
    if (unpacked.exitCode !== 0 || unpacked.timedOut) throw failed("unpack", toDir, unpacked.stderr);
  } finally {
    // The staging folder goes too when nothing else is in it: a Private home starts clean.
    const cleanUp = 'rm -f -- "$1"; rmdir -- "$2" 2>/dev/null; true';
    await to.exec({ argv: ["sh", "-c", cleanUp, "copy-folder", archive, STAGING_DIR] }).catch(() => {});
  }
  return true;
}

/** Whether `dir` of the machine's home is missing or empty. */
export async function isEmptyFolder(machine: Machine, dir: string): Promise<boolean> {
  try {
    return (await machine.files.list(dir, undefined, { limit: 1 })).length === 0;
  } catch (error) {
    if (AgentComputerError.is(error, "NOT_FOUND")) return true;
    throw error;
  }
}

function failed(step: string, dir: string, stderr: Uint8Array): AgentComputerError {
  const why = Buffer.from(stderr).toString("utf8").trim().slice(0, 300);
  return new AgentComputerError("UNAVAILABLE", `Could not ${step} "${dir}" to copy it: ${why || "tar failed"}.`);
}
