import { lchown, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/** The uid and gid commands run as inside a computer. */
export const COMPUTER_UID = 1000;
export const COMPUTER_GID = 1000;

/**
 * Gives a home folder (and, with `recursive`, everything in it) to the
 * computer's user, so uid 1000 inside the machine can write what this host
 * made (a new home, a restored one). Nothing to do when this process already
 * runs as that user.
 */
export async function giveHomeToComputer(dir: string, recursive: boolean): Promise<void> {
  if (process.getuid?.() === COMPUTER_UID) return;
  await lchown(dir, COMPUTER_UID, COMPUTER_GID);
  if (!recursive) return;
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    const info = await lstat(path);
    if (info.isDirectory()) await giveHomeToComputer(path, true);
    else await lchown(path, COMPUTER_UID, COMPUTER_GID);
  }
}

/**
 * Readies the home a new container mounts: the top folder is given to the
 * computer's user, and the whole tree too when the top folder was not yet
 * the computer's. That is how a home this host wrote looks: a new one, or
 * one the local home store swapped in whole from a checkpoint of a machine
 * of another provider kind, or of a folder (its files owned by this
 * process; the bot could not change its own files in it). A home a
 * computer already had keeps its top folder's owner, so replacing a
 * Docker computer does not walk its home. The walk follows no link, and a
 * folder the store swapped in is a new one that no running container has
 * mounted, so no bot can swap a folder for a link while it walks.
 */
export async function readyHomeForComputer(dir: string): Promise<void> {
  if (process.getuid?.() === COMPUTER_UID) return;
  const top = await lstat(dir);
  await giveHomeToComputer(dir, top.uid !== COMPUTER_UID || top.gid !== COMPUTER_GID);
}
