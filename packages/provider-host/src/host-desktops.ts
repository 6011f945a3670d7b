import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { DesktopSession, Machine } from "@agent-computer/core";
import type { MachineDesktops } from "@agent-computer/core/provider-utils";
import { computerImageDir, LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import { withDisplayStartLock } from "./display-start-lock.js";

/**
 * The in-computer files as the desktop-runtime package ships them (the
 * same files the computer image copies to /opt/agent-computer): the
 * bundled `desktop` command, run by this process's Node, and beside it
 * `bin/` (the Chromium launcher, the scanner) and `share/` (its Python
 * helpers), which it finds from its own location.
 */
export function desktopRuntimeFiles(): { readonly command: string[]; readonly binDir: string } {
  const runtime = join(computerImageDir(), "runtime");
  return { command: [process.execPath, join(runtime, "lib", "desktop.mjs")], binDir: join(runtime, "bin") };
}

/**
 * Makes `dir` hold what the desktop runtime starts by name and the package
 * does not ship executable: the Chromium launcher is a shell script whose
 * mode the image sets when it copies it in (the image tag covers the
 * files' modes, so the package keeps them as they are). Here a launcher
 * runs it with `sh`. `dir` goes first on the computer's PATH.
 */
export async function prepareDesktopBin(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const script = join(desktopRuntimeFiles().binDir, "agent-computer-chromium");
  const launcher = join(dir, "agent-computer-chromium");
  await writeFile(launcher, `#!/bin/sh\nexec /bin/sh ${JSON.stringify(script)} "$@"\n`);
  await chmod(launcher, 0o755);
}

/**
 * A host computer's desktops: the Linux desktop runtime over the machine's
 * exec, as on every Linux computer, one private display per bot. A host
 * computer never offers a person a shell in the browser (the person has
 * the machine itself), so its desktops have no `terminalEndpoint`.
 */
export function hostDesktops(machine: Machine, screenLimit: number): MachineDesktops {
  const runtime = new LinuxDesktopRuntime(machine, { screenLimit, command: desktopRuntimeFiles().command });
  return {
    openDesktop: async (botId, ctx, opts) =>
      withoutTerminal(await withDisplayStartLock(() => openOnFreeDisplay(() => runtime.openDesktop(botId, ctx, opts)))),
    quiesceDesktops: (ctx) => runtime.quiesceDesktops(ctx),
  };
}

/** Xvfb's words when another X server took the display it was given. */
const DISPLAY_TAKEN = /Server is already active for display/;

/**
 * Starts a desktop, once more when its X server found the display taken:
 * the runtime frees the slot of a failed start, and the next start skips a
 * display another X server holds. Host computers share the host's displays,
 * and a display can be taken between the runtime's look and Xvfb's start
 * (seen in a side-by-side run of this package's five suites, with the
 * host-wide start lock in place).
 */
async function openOnFreeDisplay(start: () => Promise<DesktopSession>): Promise<DesktopSession> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= 3 || !DISPLAY_TAKEN.test((error as Error).message)) throw error;
    }
  }
}

/**
 * `session` without its terminal endpoint; everything else (its page
 * browser, screens, and what the Linux session has beyond the contract)
 * passes through to the session itself.
 */
function withoutTerminal(session: DesktopSession): DesktopSession {
  return new Proxy(session, {
    get(target, property) {
      if (property === "terminalEndpoint") return undefined;
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    has: (target, property) => property !== "terminalEndpoint" && Reflect.has(target, property),
  });
}
