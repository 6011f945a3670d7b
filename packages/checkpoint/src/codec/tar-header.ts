/**
 * The ustar (POSIX.1-1988) header, with pax extended records for what ustar
 * cannot hold (long paths, files of 8 GiB and more). Written here rather
 * than by tar-stream's pack because encoding into one shared batch buffer is
 * what makes packing many small files fast (see pack-home.ts).
 */

export const BLOCK = 512;
/** The largest size an 11-digit octal field holds (8 GiB - 1). */
const MAX_OCTAL_SIZE = 0o77777777777;

export type TarEntryKind = "file" | "directory";

export interface TarHeaderFields {
  /** Home-relative POSIX path, without a trailing slash. */
  path: string;
  kind: TarEntryKind;
  mode: number;
  size: number;
  /** Seconds since the epoch. */
  mtime: number;
  /** A sparse file (see sparse-map.ts): `size` is its map and data, `realSize` the file's own size. */
  sparse?: { realSize: number };
}

/** Bytes of padding that follow `size` bytes of data to the next block. */
export function padding(size: number): number {
  const rest = size % BLOCK;
  return rest === 0 ? 0 : BLOCK - rest;
}

/**
 * The header blocks for one entry: a pax extended header first when the
 * path or size does not fit ustar, then the ustar header. Written into
 * `target` at `offset`; returns the number of bytes written.
 */
export function writeTarHeader(fields: TarHeaderFields, target: Buffer, offset: number): number {
  const name = fields.kind === "directory" ? `${fields.path}/` : fields.sparse ? sparseName(fields.path) : fields.path;
  const nameBytes = Buffer.from(name, "utf8");
  const split = splitUstarName(nameBytes);
  const bigSize = fields.size > MAX_OCTAL_SIZE;
  let written = 0;
  if (split === undefined || bigSize || fields.sparse) {
    const records: string[] = [];
    if (split === undefined) records.push(paxRecord("path", name));
    if (bigSize) records.push(paxRecord("size", String(fields.size)));
    if (fields.sparse) {
      records.push(paxRecord("GNU.sparse.major", "1"), paxRecord("GNU.sparse.minor", "0"));
      records.push(paxRecord("GNU.sparse.name", fields.path));
      records.push(paxRecord("GNU.sparse.realsize", String(fields.sparse.realSize)));
    }
    const body = Buffer.from(records.join(""), "utf8");
    writeUstar(target, offset, {
      name: Buffer.from("PaxHeader", "ascii"),
      prefix: Buffer.alloc(0),
      type: "x",
      mode: 0o644,
      size: body.length,
      mtime: fields.mtime,
    });
    body.copy(target, offset + BLOCK);
    target.fill(0, offset + BLOCK + body.length, offset + BLOCK + body.length + padding(body.length));
    written = BLOCK + body.length + padding(body.length);
  }
  const { name: shortName, prefix } = split ?? { name: nameBytes.subarray(0, 100), prefix: Buffer.alloc(0) };
  writeUstar(target, offset + written, {
    name: shortName,
    prefix,
    type: fields.kind === "directory" ? "5" : "0",
    mode: fields.mode,
    size: bigSize ? 0 : fields.size,
    mtime: fields.mtime,
  });
  return written + BLOCK;
}

/** Upper bound of `writeTarHeader`'s output for a path, to size buffers. */
export function headerBytesFor(path: string): number {
  // A pax header with records of the path (twice for a sparse file), the
  // size and the sparse fields, then the ustar one.
  return BLOCK * 4 + 2 * Buffer.byteLength(path, "utf8") + 256;
}

/** The name GNU tar gives a sparse file's own entry, so a tar without sparse support extracts it aside. */
function sparseName(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? `GNUSparseFile.0/${path}` : `${path.slice(0, slash)}/GNUSparseFile.0/${path.slice(slash + 1)}`;
}

function paxRecord(key: string, value: string): string {
  // The length prefix counts itself, so find the fixed point.
  const body = ` ${key}=${value}\n`;
  const bodyLength = Buffer.byteLength(body, "utf8");
  let length = bodyLength + String(bodyLength).length;
  if (String(length).length + bodyLength !== length) length = bodyLength + String(length).length;
  return `${length}${body}`;
}

function splitUstarName(name: Buffer): { name: Buffer; prefix: Buffer } | undefined {
  if (name.length <= 100) return { name, prefix: Buffer.alloc(0) };
  if (name.length > 256) return undefined;
  // Split at a slash so that prefix <= 155 bytes and name <= 100 bytes.
  for (let i = Math.min(155, name.length - 1); i > 0; i--) {
    if (name[i] !== 0x2f) continue;
    if (name.length - i - 1 > 100) return undefined;
    if (name.length - i - 1 === 0) continue;
    return { prefix: name.subarray(0, i), name: name.subarray(i + 1) };
  }
  return undefined;
}

interface UstarFields {
  name: Buffer;
  prefix: Buffer;
  type: string;
  mode: number;
  size: number;
  mtime: number;
}

/**
 * The fields every header shares (uid, gid, magic, version, the checksum
 * field as spaces), copied in whole: cheaper than writing them one by one
 * for each of 20,000 small files.
 */
const TEMPLATE = (() => {
  const block = Buffer.alloc(BLOCK);
  block.write("0000000\u0000", 108, "ascii");
  block.write("0000000\u0000", 116, "ascii");
  block.write("        ", 148, "ascii");
  block.write("ustar\u000000", 257, "ascii");
  return block;
})();

function writeUstar(target: Buffer, offset: number, f: UstarFields): void {
  TEMPLATE.copy(target, offset);
  f.name.copy(target, offset);
  writeOctal(target, offset + 100, 8, f.mode & 0o7777);
  writeOctal(target, offset + 124, 12, f.size);
  writeOctal(target, offset + 136, 12, Math.min(Math.max(0, Math.floor(f.mtime)), MAX_OCTAL_SIZE));
  target[offset + 156] = f.type.charCodeAt(0);
  f.prefix.copy(target, offset + 345);
  let sum = 0;
  for (let i = offset; i < offset + BLOCK; i++) sum += target[i] as number;
  writeOctal(target, offset + 148, 7, sum);
  target[offset + 155] = 0x20;
}

/** Zero-padded octal digits and a NUL, written byte by byte (no string encoding). */
function writeOctal(target: Buffer, offset: number, width: number, value: number): void {
  let rest = value;
  target[offset + width - 1] = 0;
  for (let i = offset + width - 2; i >= offset; i--) {
    target[i] = 0x30 + (rest % 8);
    rest = Math.floor(rest / 8);
  }
}
