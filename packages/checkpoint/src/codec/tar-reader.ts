import type { ByteSource } from "./byte-source.js";
import { refuseRestore } from "./restore-refusal.js";
import { BLOCK } from "./tar-header.js";

/** One entry header as the archive states it; the path is not yet checked. */
export interface TarEntryHeader {
  path: string;
  /** "file" and "directory" are restorable; anything else is named in `other`. */
  kind: "file" | "directory" | "other";
  /** What the entry is, for messages ("symbolic link", "FIFO", ...). */
  other: string;
  size: number;
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
  /**
   * A sparse file (pax GNU.sparse 1.0): `size` bytes of data follow, a map
   * of data runs first, and the file is `realSize` bytes with holes between
   * the runs (see sparse-map.ts).
   */
  sparse?: { realSize: number };
}

/** Extended headers (pax, GNU long names) are small; larger ones are hostile. */
const MAX_EXTENDED_HEADER = 64 * 1024;
/** Zero padding accepted after the end-of-archive marker (tar pads to records). */
const MAX_TRAILING_ZEROS = 1024 * 1024;

const OTHER_KINDS: Record<string, string> = {
  "1": "hard link",
  "2": "symbolic link",
  "3": "character device",
  "4": "block device",
  "6": "FIFO",
  S: "GNU sparse file",
  K: "GNU long link name",
  V: "volume label",
  M: "multi-volume continuation",
  N: "GNU old long name",
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads the next entry header, applying pax `path`/`size` records and GNU
 * long names to it. Returns "end" after the end-of-archive marker (two zero
 * blocks) when only zero padding follows it. Strict where tar is lenient:
 * a bad checksum, a missing end marker, data after it, sparse files other
 * than GNU sparse 1.0, global path overrides and malformed numbers are all
 * RESTORE_REJECTED.
 */
export async function readTarHeader(source: ByteSource): Promise<TarEntryHeader | "end"> {
  let paxPath: string | undefined;
  let paxSize: number | undefined;
  let paxMtime: number | undefined;
  let sparse: { name: string; realSize: number } | undefined;
  let longName: string | undefined;
  for (;;) {
    const block = await source.read(BLOCK);
    if (block === undefined) refuseRestore("the archive is truncated: it ends without an end-of-archive marker");
    if (isZero(block)) {
      if (paxPath !== undefined || paxSize !== undefined || longName !== undefined)
        refuseRestore("the archive ends right after an extended header");
      await readEnd(source);
      return "end";
    }
    const header = parseHeader(block);
    if (header.type === "x" || header.type === "g" || header.type === "L") {
      if (header.size > MAX_EXTENDED_HEADER) refuseRestore(`an extended header of ${header.size} bytes`);
      const body = await source.read(header.size + pad(header.size));
      if (body === undefined) refuseRestore("the archive is truncated inside an extended header");
      const data = body.subarray(0, header.size);
      if (header.type === "L") {
        const end = data.indexOf(0);
        longName = decodeName(end === -1 ? data : data.subarray(0, end), "a GNU long name");
        continue;
      }
      const records = parsePax(data);
      if (header.type === "g") {
        // A global path or size would apply to every entry: nothing honest does that.
        if (records.has("path") || records.has("size")) refuseRestore("a global pax header overrides paths or sizes");
        continue;
      }
      if (records.has("path")) paxPath = records.get("path");
      if (records.has("size")) paxSize = parseDecimal(records.get("size") as string, "pax size");
      if (records.has("mtime")) paxMtime = parsePaxTime(records.get("mtime") as string);
      sparse = sparseOf(records) ?? sparse;
      continue;
    }
    const path = sparse?.name ?? paxPath ?? longName ?? header.name;
    const size = paxSize ?? header.size;
    const mtime = paxMtime ?? header.mtime;
    if (header.type === "0" || header.type === "\0" || header.type === "7") {
      const file: TarEntryHeader = { path, kind: "file", other: "", size, mode: header.mode, mtime };
      if (sparse) file.sparse = { realSize: sparse.realSize };
      return file;
    }
    if (sparse) refuseRestore(`"${path}" has a sparse map but is not a regular file`);
    if (header.type === "5") {
      if (size !== 0) refuseRestore(`the directory entry "${path}" claims ${size} bytes of data`);
      return { path, kind: "directory", other: "", size: 0, mode: header.mode, mtime };
    }
    const other = OTHER_KINDS[header.type] ?? `entry of unknown type ${JSON.stringify(header.type)}`;
    return { path, kind: "other", other, size, mode: header.mode, mtime };
  }
}

/**
 * The pax records of a GNU sparse file: format 1.0 (what GNU tar and this
 * packer write) is read; the older 0.x formats are refused, not misread.
 */
function sparseOf(records: Map<string, string>): { name: string; realSize: number } | undefined {
  const keys = [...records.keys()].filter((key) => key.startsWith("GNU.sparse."));
  if (keys.length === 0) return undefined;
  const major = records.get("GNU.sparse.major");
  const minor = records.get("GNU.sparse.minor");
  const name = records.get("GNU.sparse.name");
  const realSize = records.get("GNU.sparse.realsize");
  if (major !== "1" || minor !== "0" || name === undefined || realSize === undefined)
    refuseRestore("a sparse file in a format other than GNU sparse 1.0");
  return { name, realSize: parseDecimal(realSize, "sparse real size") };
}

function pad(size: number): number {
  const rest = size % BLOCK;
  return rest === 0 ? 0 : BLOCK - rest;
}

async function readEnd(source: ByteSource): Promise<void> {
  const second = await source.read(BLOCK);
  if (second === undefined || !isZero(second))
    refuseRestore("the end-of-archive marker is incomplete (one zero block instead of two)");
  let trailing = 0;
  for (;;) {
    const rest = await source.readSome(64 * 1024);
    if (rest === undefined) return;
    if (!isZero(rest)) refuseRestore("there is data after the end-of-archive marker");
    trailing += rest.length;
    if (trailing > MAX_TRAILING_ZEROS) refuseRestore("there is over 1 MiB of padding after the end-of-archive marker");
  }
}

interface RawHeader {
  name: string;
  type: string;
  size: number;
  mode: number;
  mtime: number;
}

function parseHeader(block: Buffer): RawHeader {
  const stated = parseOctal(block.subarray(148, 156), "checksum");
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : (block[i] as number);
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  if (stated !== unsigned && stated !== signed) refuseRestore("a header's checksum does not match");
  const magic = block.toString("latin1", 257, 265);
  const posix = magic === "ustar\u000000";
  if (!posix && magic !== "ustar  \u0000") refuseRestore("a header is not in ustar, pax or GNU tar format");
  const type = String.fromCharCode(block[156] as number);
  const name = field(block, 0, 100, "an entry name");
  const prefix = posix ? field(block, 345, 155, "an entry name prefix") : "";
  return {
    name: prefix === "" ? name : `${prefix}/${name}`,
    type,
    size: parseNumber(block.subarray(124, 136), "size"),
    mode: parseOctal(block.subarray(100, 108), "mode"),
    mtime: parseTime(block.subarray(136, 148)),
  };
}

function field(block: Buffer, offset: number, length: number, what: string): string {
  const raw = block.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  if (end !== -1 && raw.subarray(end).some((b) => b !== 0)) refuseRestore(`${what} holds a NUL byte`);
  return decodeName(end === -1 ? raw : raw.subarray(0, end), what);
}

function decodeName(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return refuseRestore(`${what} is not valid UTF-8`);
  }
}

function parseNumber(raw: Buffer, what: string): number {
  if (((raw[0] as number) & 0x80) === 0) return parseOctal(raw, what);
  // GNU base-256: a set high bit, then a big-endian two's complement number.
  if (raw[0] === 0xff) refuseRestore(`a negative ${what}`);
  let value = (raw[0] as number) & 0x7f;
  for (let i = 1; i < raw.length; i++) {
    value = value * 256 + (raw[i] as number);
    if (value > Number.MAX_SAFE_INTEGER) refuseRestore(`a ${what} beyond 2^53`);
  }
  return value;
}

/** A header's mtime field; base-256 can say up to 2^53 seconds, so it is held to MAX_MTIME_SECONDS too. */
function parseTime(raw: Buffer): number {
  const value = parseNumber(raw, "mtime");
  if (value > MAX_MTIME_SECONDS) refuseRestore(`a header's mtime of ${value} seconds is out of range`);
  return value;
}

function parseOctal(raw: Buffer, what: string): number {
  const text = raw
    .toString("latin1")
    .replace(/[\0 ]+$/, "")
    .replace(/^ +/, "");
  if (!/^[0-7]*$/.test(text)) refuseRestore(`a header's ${what} is not an octal number`);
  return text === "" ? 0 : Number.parseInt(text, 8);
}

/**
 * Seconds either side of 1970 a restored mtime may be: about 34,000 years,
 * beyond what any file system stores (Linux clamps to its range), far inside
 * what utimes takes (1e20 fails it with EINVAL, which restore-home.ts would
 * report as a retryable UNAVAILABLE instead of refusing the archive).
 */
export const MAX_MTIME_SECONDS = 2 ** 40;

/** A pax `mtime` record: decimal seconds, an optional fraction and sign, within MAX_MTIME_SECONDS. */
function parsePaxTime(text: string): number {
  if (!/^-?[0-9]{1,20}(\.[0-9]{0,20})?$/.test(text)) refuseRestore("a pax mtime is not a decimal number");
  const value = Math.floor(Number(text));
  if (Math.abs(value) > MAX_MTIME_SECONDS) refuseRestore(`a pax mtime of ${text.slice(0, 24)} seconds is out of range`);
  return value;
}

function parseDecimal(text: string, what: string): number {
  if (!/^[0-9]{1,16}$/.test(text)) refuseRestore(`a ${what} is not a decimal number`);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) refuseRestore(`a ${what} beyond 2^53`);
  return value;
}

function parsePax(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let offset = 0;
  while (offset < data.length) {
    const space = data.indexOf(0x20, offset);
    if (space === -1) refuseRestore("a malformed pax record");
    const length = Number(data.toString("latin1", offset, space));
    if (!Number.isSafeInteger(length) || length <= space - offset + 1 || offset + length > data.length)
      refuseRestore("a malformed pax record length");
    const record = data.subarray(space + 1, offset + length);
    if (record[record.length - 1] !== 0x0a) refuseRestore("a pax record without its newline");
    const text = decodeName(record.subarray(0, record.length - 1), "a pax record");
    const equals = text.indexOf("=");
    if (equals <= 0) refuseRestore("a pax record without a key");
    const key = text.slice(0, equals);
    records.set(key, text.slice(equals + 1));
    offset += length;
  }
  return records;
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== 0) return false;
  return true;
}
