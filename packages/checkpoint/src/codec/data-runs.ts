import { spawn } from "node:child_process";
import { read } from "node:fs";
import { AgentComputerError } from "@agent-computer/core";
import { type DataRun, MAX_RUNS } from "./sparse-map.js";

/**
 * Where the data of a file with holes lies, at a cost bounded by its data
 * rather than its size: a bot can make a 15 TiB file of a few bytes, and
 * reading its holes as zeros took hours (issue 45, finding 4).
 *
 * Node has no lseek, so SEEK_DATA / SEEK_HOLE are asked of a Perl one-liner
 * that is handed the packer's own descriptor as its stdin (the same open
 * file, so a bot renaming the path meanwhile changes nothing). Debian's
 * perl-base is Essential, so it is on every Debian or Ubuntu host (the E2B
 * emulator relies on the same, packages/provider-e2b/src/testing/envd-leader.ts).
 * Without it, or on a file system whose answer cannot be trusted, the file is
 * read and segments of zeros are taken as holes, which is refused past
 * SCAN_LIMIT instead of reading for hours.
 */

/** Holes counted in 64 KiB segments when the file is read. */
const SCAN_SEGMENT = 64 * 1024;
const SCAN_CHUNK = 1024 * 1024;
const ZEROS = Buffer.alloc(SCAN_SEGMENT);
/** Most a file is read to find its holes: the default restore file limit (restore-limits.ts), a few seconds of reading. */
export const SCAN_LIMIT = 16 * 1024 ** 3;

/**
 * Files below this are read for their holes even when the helper is there:
 * starting perl (about 9 ms here) costs more than reading 16 MiB of holes,
 * and a home of many small sparse files would pay it per file.
 */
const SEEK_MIN_SIZE = 16 * 1024 * 1024;

/** Data runs a file may have: one run of the map is kept for the empty run that marks a trailing hole. */
const MOST_DATA_RUNS = MAX_RUNS - 1;

/** Exit codes of SEEK_SCRIPT besides 0. */
const SEEK_UNSUPPORTED = 3;
const SEEK_TOO_MANY_RUNS = 4;

/**
 * argv: the file's size, the most runs to print. Prints "offset end" per
 * data run. sysseek answers "0 but true" for offset 0, hence the `+ 0`.
 * ENXIO from SEEK_DATA means only a hole is left.
 */
const SEEK_SCRIPT = `use strict; use Errno qw(ENXIO);
my ($size, $max) = @ARGV; my ($pos, $runs) = (0, 0);
while ($pos < $size) {
  my $data = sysseek(STDIN, $pos, 3);
  if (!defined $data) { exit 0 if $! == ENXIO; exit ${SEEK_UNSUPPORTED}; }
  $data += 0; last if $data >= $size;
  my $hole = sysseek(STDIN, $data, 4);
  exit ${SEEK_UNSUPPORTED} unless defined $hole;
  $hole += 0; $hole = $size if $hole > $size;
  exit ${SEEK_TOO_MANY_RUNS} if ++$runs > $max;
  print "$data $hole\\n";
  $pos = $hole;
}`;

export interface DataRunsOptions {
  /** Stops the work: the helper is killed, the read loop ends; ABORTED. */
  signal: AbortSignal;
  /** The interpreter asked for SEEK_DATA; undefined reads the file instead (tests use it). */
  seeker?: string | undefined;
}

export const DEFAULT_SEEKER = "perl";

/**
 * The data runs of the file open as `fd`, `size` bytes long with `allocated`
 * bytes on disk, ending with an empty run at `size` when the file ends in a
 * hole (as GNU tar writes it). LIMIT_EXCEEDED past MAX_RUNS runs (a restore
 * would refuse the map), or when the file must be read and is over SCAN_LIMIT.
 */
export async function findDataRuns(
  fd: number,
  size: number,
  allocated: number,
  path: string,
  options: DataRunsOptions,
): Promise<DataRun[]> {
  let runs =
    options.seeker === undefined || size < SEEK_MIN_SIZE ? undefined : await seekDataRuns(fd, size, path, options);
  // A file system without SEEK_DATA reports the whole file as data; more
  // data than blocks on disk means its answer says nothing about the holes.
  if (runs !== undefined && totalLength(runs) > allocated + SCAN_CHUNK) runs = undefined;
  if (runs === undefined) runs = await scanDataRuns(fd, size, path, options.signal);
  const last = runs.at(-1);
  if (!last || last.offset + last.length < size) runs.push({ offset: size, length: 0 });
  return runs;
}

function totalLength(runs: readonly DataRun[]): number {
  return runs.reduce((sum, run) => sum + run.length, 0);
}

/** SEEK_DATA / SEEK_HOLE through the helper; undefined when it is missing or the file system cannot answer. */
function seekDataRuns(
  fd: number,
  size: number,
  path: string,
  options: DataRunsOptions,
): Promise<DataRun[] | undefined> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortedError(path));
    const child = spawn(options.seeker as string, ["-e", SEEK_SCRIPT, String(size), String(MOST_DATA_RUNS)], {
      stdio: [fd, "pipe", "ignore"],
      signal,
    });
    let output = "";
    // stdout is "pipe" above, so it exists.
    const stdout = child.stdout as NonNullable<typeof child.stdout>;
    stdout.setEncoding("latin1");
    stdout.on("data", (text: string) => {
      output += text;
    });
    child.once("error", (error: NodeJS.ErrnoException) => {
      if (signal.aborted) reject(abortedError(path));
      else if (error.code === "ENOENT" || error.code === "EACCES") resolve(undefined);
      else reject(error);
    });
    child.once("close", (code) => {
      if (signal.aborted) return reject(abortedError(path));
      if (code === SEEK_TOO_MANY_RUNS) return reject(tooManyRuns(path));
      if (code !== 0) return resolve(undefined);
      resolve(parseRuns(output, size));
    });
  });
}

function parseRuns(output: string, size: number): DataRun[] | undefined {
  const runs: DataRun[] = [];
  let end = 0;
  for (const line of output.split("\n")) {
    if (line === "") continue;
    const match = /^([0-9]{1,16}) ([0-9]{1,16})$/.exec(line);
    if (!match) return undefined;
    const offset = Number(match[1]);
    const stop = Number(match[2]);
    if (offset < end || stop <= offset || stop > size) return undefined;
    runs.push({ offset, length: stop - offset });
    end = stop;
  }
  return runs;
}

/** The file read whole, 1 MiB at a time, a segment of zeros taken as a hole; stops on the signal. */
async function scanDataRuns(fd: number, size: number, path: string, signal: AbortSignal): Promise<DataRun[]> {
  if (size > SCAN_LIMIT)
    throw new AgentComputerError(
      "LIMIT_EXCEEDED",
      `"${path}" is ${size} bytes with holes, and this host cannot find holes without reading them (no perl, or a file system without SEEK_DATA): over the ${SCAN_LIMIT}-byte limit for reading them; nothing was saved.`,
      { details: { limit: "sparseScanBytes", path } },
    );
  const runs: DataRun[] = [];
  const chunk = Buffer.allocUnsafe(SCAN_CHUNK);
  for (let position = 0; position < size; ) {
    if (signal.aborted) throw abortedError(path);
    const got = await readAt(fd, chunk, position);
    if (got === 0) break;
    for (let start = 0; start < got; start += SCAN_SEGMENT) {
      const end = Math.min(start + SCAN_SEGMENT, got);
      const segment = chunk.subarray(start, end);
      if (segment.equals(ZEROS.subarray(0, segment.length))) continue;
      const last = runs.at(-1);
      if (last && last.offset + last.length === position + start) last.length += end - start;
      else runs.push({ offset: position + start, length: end - start });
    }
    if (runs.length > MOST_DATA_RUNS) throw tooManyRuns(path);
    position += got;
  }
  return runs;
}

function tooManyRuns(path: string): AgentComputerError {
  return new AgentComputerError(
    "LIMIT_EXCEEDED",
    `"${path}" has over ${MOST_DATA_RUNS} separate runs of data between holes, more than a restore accepts; nothing was saved.`,
    { details: { limit: "sparseRuns", path } },
  );
}

function abortedError(path: string): AgentComputerError {
  return new AgentComputerError("ABORTED", `The home archive was closed while finding the holes of "${path}".`);
}

/** An asynchronous positioned read on a numeric fd (the thread pool does the waiting). */
export function readAt(fd: number, target: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, target, 0, target.length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead)));
  });
}
