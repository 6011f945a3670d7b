import { AgentComputerError, type Machine } from "@agent-computer/core";
import type { DownloadTarget } from "./download-target.js";
import { DOWNLOAD_SCRIPT, SCRIPT_EXIT } from "./home-file-scripts.js";

/**
 * How much of a file one command in the machine reads. The bytes go on to
 * the browser as they arrive and the next command starts only once it took
 * them, so the host holds at most this much however slow the browser: the
 * same peak as when 4 MiB chunks were held whole and then copied once. A
 * command costs tens of milliseconds whatever it reads (a Docker exec), so
 * fewer, larger chunks are what keeps a download near the machine's own read.
 */
export const DOWNLOAD_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Streams `rel` (home-relative, lexically checked) from a running machine
 * to `target`. The first command resolves the path inside the machine
 * (links out of the home refused), reports the file's size and sends the
 * first chunk, so a refusal is a status before any byte; later chunks are
 * read by position up to that size (a file that grows meanwhile is sent as
 * it was when the download began; one that shrinks ends where it ends).
 */
export async function streamDownload(machine: Machine, rel: string, target: DownloadTarget): Promise<void> {
  if (rel === "") throw new AgentComputerError("INVALID_ARGUMENT", "The home is a folder; name a file to download.");
  let begun = false;
  const send = (chunk: Uint8Array) => {
    if (!begun) target.begin(rel.split("/").at(-1) ?? "download");
    begun = true;
    target.write(chunk);
  };
  let size = Number.POSITIVE_INFINITY;
  for (let offset = 0; ; ) {
    // Past the first chunk, no further than the size the first reported (the script caps the first).
    const count = Math.min(DOWNLOAD_CHUNK_BYTES, size - offset);
    let got = 0;
    const result = await machine.exec(
      {
        argv: ["sh", "-c", DOWNLOAD_SCRIPT, "sh", machine.workspacePath, rel, String(count), String(offset)],
        // The bytes are taken as they arrive (onOutput); only the size line on stderr is kept.
        maxOutputBytes: 64,
        onOutput: (stream, chunk) => {
          if (stream !== "stdout") return;
          got += chunk.length;
          send(chunk);
        },
      },
      { signal: target.signal },
    );
    if (result.exitCode !== 0) throw chunkFailure(rel, result.exitCode, begun);
    if (offset === 0) size = sizeOf(result.stderr, rel);
    offset += got;
    // A short chunk: the file shrank since.
    if (offset >= size || got < Math.min(count, size - (offset - got))) break;
    await target.drained();
  }
  if (!begun) send(new Uint8Array(0));
}

function chunkFailure(rel: string, exitCode: number | null, begun: boolean): AgentComputerError {
  // Refusals come before any byte, from the first command; past that only a cut is honest (create-files.ts).
  if (!begun && exitCode === SCRIPT_EXIT.outside)
    return new AgentComputerError("INVALID_ARGUMENT", `Invalid path "${rel}": it leads out of the home.`);
  if (!begun && exitCode === SCRIPT_EXIT.wrongType)
    return new AgentComputerError("INVALID_ARGUMENT", `"${rel}" is not a regular file.`);
  if (!begun && exitCode === SCRIPT_EXIT.missing)
    return new AgentComputerError("NOT_FOUND", `"${rel}" does not exist in the home.`);
  return new AgentComputerError("UNAVAILABLE", `Reading "${rel}" stopped part way (exit ${exitCode}).`);
}

function sizeOf(stderr: Uint8Array, rel: string): number {
  const size = Number(Buffer.from(stderr).toString("utf8").trim());
  if (!Number.isSafeInteger(size) || size < 0)
    throw new AgentComputerError("UNAVAILABLE", `The machine did not report the size of "${rel}".`);
  return size;
}
