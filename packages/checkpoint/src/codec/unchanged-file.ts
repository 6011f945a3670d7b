import { constants, type Stats } from "node:fs";
import { type FileHandle, link, lstat, open } from "node:fs/promises";

/**
 * A staged file may be a hard link to the target's current copy instead of
 * new bytes when that copy is a regular file with the same size, mode and
 * mtime, and (checked by the caller, byte for byte) the same content: the
 * staged home is then what writing it would have made, and neither the
 * write nor the removal of the old copy's bytes at the swap costs anything.
 * Only for a target no one but its store writes (stageHome's
 * `linkUnchanged`): the link shares the inode until the swap removes the
 * old copy.
 */
export function matchesEntry(stat: Stats | undefined, size: number, mode: number, mtime: number): boolean {
  return (
    stat?.isFile() === true &&
    stat.size === size &&
    (stat.mode & 0o777) === mode &&
    Math.round(stat.mtimeMs) === Math.round(mtime * 1000)
  );
}

/** The target's copy opened for comparing, when its metadata matches the entry; else undefined. */
export async function openUnchanged(
  previous: string,
  size: number,
  mode: number,
  mtime: number,
): Promise<FileHandle | undefined> {
  const stat = await lstat(previous).catch(() => undefined);
  if (!matchesEntry(stat, size, mode, mtime)) return undefined;
  return open(previous, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
}

/** Whether the copy holds exactly `chunk` at `position`. */
export async function holdsAt(previous: FileHandle, chunk: Uint8Array, position: number): Promise<boolean> {
  const held = Buffer.allocUnsafe(chunk.length);
  let done = 0;
  while (done < chunk.length) {
    const { bytesRead } = await previous.read(held, done, chunk.length - done, position + done);
    if (bytesRead === 0) return false;
    done += bytesRead;
  }
  return held.equals(chunk);
}

/** Copies the copy's first `length` bytes into `into` (what the entry had in common with it). */
export async function copyPrefix(previous: FileHandle, into: FileHandle, length: number): Promise<void> {
  const buffer = Buffer.allocUnsafe(Math.min(length, 1024 * 1024) || 1);
  for (let position = 0; position < length; ) {
    const { bytesRead } = await previous.read(buffer, 0, Math.min(buffer.length, length - position), position);
    if (bytesRead === 0) throw new Error("the previous copy shrank while it was compared");
    let written = 0;
    while (written < bytesRead) written += (await into.write(buffer, written, bytesRead - written)).bytesWritten;
    position += bytesRead;
  }
}

/** Links the copy in; false when the file system refuses (the caller then writes it). */
export function linkPrevious(previous: string, destination: string): Promise<boolean> {
  return link(previous, destination).then(
    () => true,
    () => false,
  );
}
