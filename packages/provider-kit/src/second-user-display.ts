import { randomBytes } from "node:crypto";
import { IMPORT_ENV } from "@agent-computer/checkpoint";
import type { ExecResult, Machine, OpContext } from "@agent-computer/core";
import {
  enterOperation,
  type MachineCommand,
  machineCommandOf,
  parseExecRequest,
} from "@agent-computer/core/provider-utils";
import { secondUserDisplayEnv } from "@agent-computer/desktop-runtime";

/**
 * The display as a second Unix user of the bot's machine
 * (docs/architecture.md §4, "A second user"): X, the window manager, the
 * screen servers, Chromium and the gateway with the resident service run
 * as a user the bot's user cannot signal, trace or reach over X, so during
 * a person's takeover no process of the bot sends input to the display or
 * reads what the person types. A provider offers it where its service
 * runs a command as a user it names, root among them, and nothing inside
 * the machine runs commands for a process that asks without a credential.
 */
export interface SecondUserDisplay {
  /** The display user's name, as the service takes it. */
  readonly user: string;
  /** The display user's own home (0700, never the bot's): its programs' configuration and its state folder. */
  readonly home: string;
  /** `uid:gid` of the bot's user: an import gives it the home. */
  readonly botOwner: string;
  /** `uid:gid` of the display's user: an import gives it `.browser-profiles`. */
  readonly displayOwner: string;
  /**
   * A folder only root reaches, on the home's filesystem: imports are
   * uploaded and unpacked there, out of the bot's reach, then renamed in.
   */
  readonly stagingParent: string;
}

/** Who a command of the kit runs as where the display is a second user. */
export type CommandUser = "bot" | "display" | "root";

/** Runs a command as one of the machine's users (HostedMachine's `runCommandAs`). */
type RunAs = (as: CommandUser, command: MachineCommand, context: OpContext, what: string) => Promise<ExecResult>;

/**
 * The machine the desktop runtime drives where the display is a second
 * user: the bot's machine, but its `exec` runs as the display's user with
 * the display's environment (secondUserDisplayEnv), so every `desktop`
 * call, and the resident service it starts, is the display's.
 */
export function displayUserMachine(
  machine: Pick<Machine, "workspacePath" | "portUrl">,
  display: SecondUserDisplay,
  runAs: RunAs,
): Pick<Machine, "exec" | "workspacePath" | "portUrl"> {
  const env = secondUserDisplayEnv(display.home);
  return {
    workspacePath: machine.workspacePath,
    portUrl: (port, opts, ctx) => (machine.portUrl as NonNullable<Machine["portUrl"]>)(port, opts, ctx),
    exec: (req, ctx) => {
      const command = machineCommandOf(parseExecRequest(req), machine.workspacePath);
      return runAs(
        "display",
        { ...command, env: { ...command.env, ...env } },
        enterOperation(ctx, "command"),
        "run a desktop command",
      );
    },
  };
}

/**
 * A person's terminals open on the bot's terminal host (`desktop
 * terminal-host`, on loopback), so they run as the bot's user, beside its
 * processes (issue 46), not as the display's. Started as the bot before
 * each desktop opens; one already running keeps the port and the new one
 * exits.
 */
export const START_TERMINAL_HOST: readonly string[] = Object.freeze([
  "sh",
  "-c",
  "setsid -f desktop terminal-host </dev/null >/dev/null 2>&1",
]);

/** The environment of an import run as root: staged out of the bot's reach, then given to its owners. */
export function rootImportEnv(display: SecondUserDisplay): Record<string, string> {
  return {
    [IMPORT_ENV.stagingParent]: display.stagingParent,
    [IMPORT_ENV.homeOwner]: display.botOwner,
    [IMPORT_ENV.profilesOwner]: display.displayOwner,
  };
}

/** A fresh file in the display's own home, for the profiles' part of an export. */
export function displayTransferFile(display: SecondUserDisplay): string {
  return `${display.home}/export-${randomBytes(6).toString("hex")}.tar`;
}

/** A fresh file in the root-only staging folder, for an import's upload. */
export function stagingTransferFile(display: SecondUserDisplay): string {
  return `${display.stagingParent}/upload-${randomBytes(6).toString("hex")}.tar`;
}
