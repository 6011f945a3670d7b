import { PassThrough, type Readable } from "node:stream";
import { AgentComputerError, type ExecResult, type Machine } from "@agent-computer/core";
import { SCRIPT_EXIT } from "./home-file-scripts.js";

/** The line UPLOAD_SCRIPT waits for after the bytes before it renames (home-file-scripts.ts). */
const CONFIRMED = "ok\n";

/** An upload's bytes: the request itself while it arrives, or received whole already (no declared length). */
export type UploadSource = { readonly body: Readable; readonly size: number } | { readonly bytes: Uint8Array };

/**
 * Runs UPLOAD_SCRIPT (`argv`) with the bytes streamed to its stdin as they
 * reach the host, so the machine writes while the browser still sends and
 * the host holds no upload whole. `confirm` runs once every byte arrived
 * (the lease check); only then the script is told to rename. A cut body or
 * a failed `confirm` withholds that, the script removes its temporary file
 * and exits `unconfirmed`, and this throws why. Whatever the script does,
 * the rest of the body is read and dropped, so the request ends.
 */
export async function runUploadScript(
  machine: Machine,
  argv: string[],
  source: UploadSource,
  confirm: () => Promise<void>,
): Promise<ExecResult> {
  // Cut while the checks before ran: its events are gone, and no command should start for it.
  if ("body" in source && source.body.destroyed && !source.body.readableEnded) throw cut();
  const stdin = new PassThrough();
  // A script that ended early (a refusal) leaves the confirmation nowhere to go; that is no failure.
  stdin.on("error", () => {});
  let withheld: unknown;
  void feed(stdin, source, confirm).catch((error: unknown) => {
    withheld = error;
    stdin.end();
  });
  try {
    const result = await machine.exec({ argv, stdin, maxOutputBytes: 64 * 1024 });
    // The script reads the confirmation only after the last byte, so a withheld one is known by now.
    if (result.exitCode === SCRIPT_EXIT.unconfirmed && withheld !== undefined) throw withheld;
    return result;
  } finally {
    if ("body" in source) {
      source.body.unpipe(stdin);
      source.body.resume();
    }
    stdin.destroy();
  }
}

async function feed(stdin: PassThrough, source: UploadSource, confirm: () => Promise<void>): Promise<void> {
  if ("bytes" in source) stdin.write(source.bytes);
  else await relay(source.body, stdin, source.size);
  await confirm();
  stdin.end(CONFIRMED);
}

/** Pipes `body` into `stdin` (with backpressure, leaving it open); rejects ABORTED unless exactly `size` bytes came. */
function relay(body: Readable, stdin: PassThrough, size: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let got = 0;
    body.on("data", (chunk: Buffer) => {
      got += chunk.length;
    });
    body.once("end", () => (got === size ? resolve() : reject(cut())));
    body.once("error", (error) => reject(cut(error)));
    body.once("aborted", () => reject(cut()));
    body.once("close", () => {
      if (!body.readableEnded) reject(cut());
    });
    body.pipe(stdin, { end: false });
  });
}

/** A body that ended before its declared length, or broke off. */
export function cut(cause?: unknown): AgentComputerError {
  return new AgentComputerError("ABORTED", "The upload was cut off before it ended; nothing was saved.", {
    ...(cause === undefined ? {} : { cause }),
  });
}
