import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";

/** A program a host computer's private display runs, and the Debian package that has it. */
export interface DisplayProgram {
  readonly program: string;
  readonly debianPackage: string;
  /** What the desktop uses it for, in words for the person who installs it. */
  readonly usedFor: string;
}

/**
 * What the desktop runtime runs on a private display (the computer image
 * installs the same packages: packages/desktop-runtime/image/Dockerfile).
 * `.ci/display-setup.sh` installs them on a CI machine.
 */
export const DISPLAY_PROGRAMS: readonly DisplayProgram[] = [
  { program: "Xvfb", debianPackage: "xvfb", usedFor: "the private X display" },
  { program: "openbox", debianPackage: "openbox", usedFor: "the window manager" },
  { program: "xdotool", debianPackage: "xdotool", usedFor: "mouse and keyboard input" },
  { program: "xdpyinfo", debianPackage: "x11-utils", usedFor: "waiting for the display" },
  { program: "xprop", debianPackage: "x11-utils", usedFor: "waiting for the window manager" },
  { program: "x11vnc", debianPackage: "x11vnc", usedFor: "live screens" },
  { program: "chromium", debianPackage: "chromium", usedFor: "the bot's browser" },
  { program: "python3", debianPackage: "python3", usedFor: "the background-work scanner and typing beyond ASCII" },
  { program: "convert", debianPackage: "imagemagick", usedFor: "JPEG and WebP frames" },
];

/** The programs of `DISPLAY_PROGRAMS` that no folder of `path` holds as an executable file. */
export async function missingDisplayPrograms(path: string): Promise<DisplayProgram[]> {
  const dirs = path.split(delimiter).filter((dir) => dir !== "");
  const missing: DisplayProgram[] = [];
  for (const program of DISPLAY_PROGRAMS) {
    if (!(await onPath(program.program, dirs))) missing.push(program);
  }
  return missing;
}

async function onPath(program: string, dirs: readonly string[]): Promise<boolean> {
  for (const dir of dirs) {
    try {
      await access(join(dir, program), constants.X_OK);
      return true;
    } catch {
      // Not in this folder.
    }
  }
  return false;
}

/**
 * Refuses a private display this host cannot run, before anything starts:
 * `UNSUPPORTED` naming each missing program and the Debian packages to
 * install. Nothing is installed here: what goes on the person's machine is
 * theirs to decide.
 */
export async function checkDisplayStack(path: string): Promise<void> {
  const missing = await missingDisplayPrograms(path);
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((m) => m.debianPackage))];
  const programs = missing.map((m) => `${m.program} (${m.usedFor})`).join(", ");
  throw new AgentComputerError(
    "UNSUPPORTED",
    `A host computer's private display needs programs this machine lacks: ${programs}. On Debian or Ubuntu install them with: apt-get install --no-install-recommends ${packages.join(" ")}. Or provision with display: "none" for shell and files only.`,
    { details: { missingPrograms: missing.map((m) => m.program), debianPackages: packages } },
  );
}

/**
 * Refuses a system host computers do not run on. Commands, files and the
 * process bookkeeping read Linux's /proc; the desktop is the Linux desktop
 * runtime on an X display of its own. macOS and Windows have neither, and
 * no untested driver for them ships.
 */
export function checkHostPlatform(platform: NodeJS.Platform): void {
  if (platform === "linux") return;
  throw new AgentComputerError(
    "UNSUPPORTED",
    `Host computers run on Linux only (this is ${platform}): commands, files and home transfer on any Linux, and a desktop on a private X display (Xvfb) of its own, which works under an X11 or a Wayland session alike. On macOS and Windows use Docker computers (dockerProvider).`,
  );
}

/**
 * Refuses a desktop for a root user: Chromium's sandbox and the screen
 * gateway never run as root. An app that runs as root names an ordinary
 * user for the computer's commands (`user`).
 */
export function checkDesktopUser(uid: number | undefined): void {
  if (uid !== 0) return;
  throw new AgentComputerError(
    "UNSUPPORTED",
    "A host computer's desktop never runs as root (Chromium's sandbox and the screen gateway refuse it), and this app runs as root: give hostProvider a user ({ uid, gid }) to run the computer's commands as, or run the app as an ordinary user.",
  );
}
