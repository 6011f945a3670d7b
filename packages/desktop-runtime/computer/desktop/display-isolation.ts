import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { DEVTOOLS_TRANSPORT_ENV, X_ACCESS_ENV } from "../../src/desktop/display-apart-policy.js";
import { CliError } from "./cli-error.js";

/**
 * Whether the display shares the bot's network and IPC namespaces
 * (DEVTOOLS_TRANSPORT_ENV "pipe": a display container in a Kubernetes pod,
 * or the display as a second user of the bot's machine): then DevTools
 * runs on a pipe behind a bridge's Unix socket and nothing uses SysV
 * shared memory, whose segments the pod's containers share.
 */
export const sharesBotNamespaces = () => process.env[DEVTOOLS_TRANSPORT_ENV] === "pipe";

/**
 * Whether X admits only clients holding the display's cookie
 * (X_ACCESS_ENV "cookie"): the display runs as a second user beside the
 * bot's processes (docs/architecture.md §4, "A second user"), whose X
 * clients reach its sockets but hold no cookie.
 */
export const xNeedsCookie = () => process.env[X_ACCESS_ENV] === "cookie";

/**
 * How X takes clients:
 * - with a cookie (a second user): on its file and abstract sockets, each
 *   client proving the cookie. Xvfb holds the abstract name itself, so no
 *   process of the bot can bind it first and be taken for the display by
 *   the display's own clients, which try it before the file socket.
 * - sharing the bot's namespaces without one (a pod): on its Unix socket in
 *   this container's /tmp only; its abstract socket lives in the network
 *   namespace the bot shares (`-nolisten local`).
 * MIT-SHM is off wherever the display shares the bot's IPC namespace.
 */
export function xServerAccessArguments(stateDir: string): string[] {
  if (xNeedsCookie()) return ["-auth", xAuthorityFile(stateDir), "-extension", "MIT-SHM"];
  return sharesBotNamespaces() ? ["-nolisten", "local", "-extension", "MIT-SHM"] : [];
}

const xAuthorityFile = (stateDir: string) => join(stateDir, "xauthority");

/**
 * With a cookie, makes the display's authority file once (0600 in the
 * state folder, which is this user's own, desktop-state.ts) and points
 * every X client this process starts at it (XAUTHORITY): one
 * MIT-MAGIC-COOKIE-1 for every display, as a FamilyWild entry with no
 * display number, which Xlib and XCB match for any display and Xvfb loads
 * from `-auth`. The cookie never leaves this user's files.
 */
export function prepareXAccess(stateDir: string): void {
  if (!xNeedsCookie()) return;
  const file = xAuthorityFile(stateDir);
  try {
    const fd = openSync(file, "wx", 0o600);
    try {
      writeSync(fd, authorityEntry(randomBytes(16)));
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  process.env.XAUTHORITY = file;
}

/** One Xauthority record: family, address, display number, name and data, each length-prefixed (big-endian). */
function authorityEntry(cookie: Buffer): Buffer {
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  const familyWild = Buffer.from([0xff, 0xff]);
  return Buffer.concat([
    familyWild,
    field(Buffer.alloc(0)),
    field(Buffer.alloc(0)),
    field(Buffer.from("MIT-MAGIC-COOKIE-1")),
    field(cookie),
  ]);
}

/**
 * Makes a bot's profile folder. Where the display is a second user, the
 * home is the bot's and `.browser-profiles` the display's (made by the
 * provider, and given to the display by every import): a folder the
 * display cannot write there was moved or replaced by a process of the
 * bot, and the desktop cannot start until a restore brings it back.
 */
export function makeProfileFolder(profile: string): void {
  try {
    // 0700, as Chromium makes its own folders: wherever a link the bot planted leads it, the bot cannot enter.
    mkdirSync(profile, { recursive: true, mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EACCES") throw error;
    throw new CliError(
      "UNAVAILABLE",
      `The display cannot write the browser profiles folder ${dirname(profile)}: it is not the display's own (a process of the bot moved or replaced it); restore a checkpoint to bring it back.`,
    );
  }
}
