import { PassThrough, type Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import type { DetachedChannel } from "./detached-channel.js";
import { shellQuote } from "./shell-quote.js";

/**
 * Raw bytes per files-API write or read: a service that carries file
 * content as base64 in JSON makes each body a third larger, and the parts
 * keep every body well under the size such APIs accept.
 */
export const FILE_PART_BYTES = 8 * 1024 * 1024;

/** How parts move: how many at once, and how big (default FILE_PART_BYTES). */
export interface PartOptions {
  inFlightMost?: number;
  partBytes?: number;
}

/** The channel's calls that move files (a subset of DetachedChannel). */
export type FileChannel = Pick<DetachedChannel, "sync" | "writeFile" | "readFile" | "redact">;

const partName = (file: string, index: number) => `${file}.part-${String(index).padStart(6, "0")}`;

/**
 * Puts `bytes` at `path` (absolute) through the files API: one write, or
 * parts joined in the machine when larger than one part (two writes in flight).
 */
export async function stageBytes(channel: FileChannel, path: string, bytes: Uint8Array, signal: AbortSignal) {
  if (bytes.length <= FILE_PART_BYTES) {
    await channel.writeFile(path, bytes, signal);
    return;
  }
  async function* parts() {
    for (let offset = 0; offset < bytes.length; offset += FILE_PART_BYTES) {
      yield bytes.subarray(offset, offset + FILE_PART_BYTES);
    }
  }
  await uploadInParts(channel, parts(), path, signal);
}

/**
 * Streams `data` to `file` (absolute) through the files API in parts of
 * FILE_PART_BYTES (two writes in flight), then joins them in the machine.
 */
export async function uploadInParts(
  channel: FileChannel,
  data: AsyncIterable<Uint8Array | string>,
  file: string,
  signal: AbortSignal,
  /** Parts sent at once (1 where a request's deadline starts when it is asked, not sent) and their size. */
  { inFlightMost = 2, partBytes = FILE_PART_BYTES }: PartOptions = {},
): Promise<void> {
  let index = 0;
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  const send = async (bytes: Uint8Array) => {
    const write = channel.writeFile(partName(file, index++), bytes, signal).catch((error: unknown) => {
      failure ??= error;
    });
    inFlight.add(write);
    void write.finally(() => inFlight.delete(write));
    if (inFlight.size >= inFlightMost) await Promise.race(inFlight);
    if (failure !== undefined) throw failure;
  };
  let pending: Buffer[] = [];
  let size = 0;
  for await (const chunk of data) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk);
    pending.push(bytes);
    size += bytes.length;
    while (size >= partBytes) {
      const all = Buffer.concat(pending);
      await send(all.subarray(0, partBytes));
      pending = [all.subarray(partBytes)];
      size = all.length - partBytes;
    }
  }
  if (size > 0 || index === 0) await send(Buffer.concat(pending));
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure;
  const joined = await channel.sync(
    `cat "$0".part-* > "$0" && rm -f "$0".part-*`.replaceAll("$0", shellQuote(file)),
    signal,
    300,
  );
  if (joined.exitCode !== 0) {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The machine could not join the parts of ${file} (exit ${joined.exitCode}): ${channel.redact(joined.stderr.slice(0, 300)) || "no message"}`,
    );
  }
}

/**
 * Reads `file` (absolute) through the files API as a stream: split in the
 * machine into parts of FILE_PART_BYTES (the file itself goes), read two
 * ahead. The parts stay until the caller removes them (a `sync` of
 * `removeFileAndParts(file)` once its reader is done).
 */
export async function downloadInParts(
  channel: FileChannel,
  file: string,
  signal: AbortSignal,
  /** Parts read at once and their size (see uploadInParts). */
  { inFlightMost = 2, partBytes = FILE_PART_BYTES }: PartOptions = {},
): Promise<Readable> {
  const split = await channel.sync(
    `split -b ${partBytes} -d -a 6 -- "$0" "$0.part-" && rm -f -- "$0" && ls -- "$0".part-* | wc -l`.replaceAll(
      "$0",
      shellQuote(file),
    ),
    signal,
    300,
  );
  if (split.exitCode !== 0) {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The machine could not split ${file} for reading (exit ${split.exitCode}): ${channel.redact(split.stderr.slice(0, 300)) || "no message"}`,
    );
  }
  const parts = Number(split.stdout.trim());
  const out = new PassThrough();
  const read = (index: number) => {
    const part = channel.readFile(partName(file, index), signal);
    // Read ahead: a part nobody awaits any more (an earlier one failed) must not fail unheard.
    part.catch(() => {});
    return part;
  };
  void (async () => {
    const ahead: Promise<Buffer>[] = [];
    for (let i = 0; i < Math.min(inFlightMost, parts); i++) ahead.push(read(i));
    for (let i = 0; i < parts; i++) {
      const bytes = await (ahead.shift() as Promise<Buffer>);
      if (i + inFlightMost < parts) ahead.push(read(i + inFlightMost));
      if (out.destroyed) return;
      if (!out.write(bytes)) await new Promise((resolve) => out.once("drain", resolve));
    }
    out.end();
  })().catch((error: unknown) => out.destroy(error as Error));
  return out;
}

/** A shell line that removes a file moved in parts, its parts included. */
export function removeFileAndParts(file: string): string {
  return `rm -f -- ${shellQuote(file)} ${shellQuote(file)}.part-*`;
}

/** All of a stream's bytes (staged stdin has to be whole before the command starts). */
export async function bytesOf(input: Uint8Array | Readable): Promise<Uint8Array> {
  if (input instanceof Uint8Array) return input;
  const chunks: Buffer[] = [];
  for await (const chunk of input)
    chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
