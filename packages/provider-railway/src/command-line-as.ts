import { AgentComputerError } from "@agent-computer/core";
import { shellQuote } from "@agent-computer/provider-kit";
import type { BridgeInit } from "./exec-bridge.js";

/**
 * The one variable the bridge sets: the command's environment, as shell
 * `export` lines in base64. The bridge's process is root's (the service
 * runs with RAILWAY_RUN_UID=0), and an environment it takes from a caller
 * reaches root's own shell before any drop: a bot's `LD_PRELOAD` or
 * `PATH` would run the bot's code as root (measured on the emulator,
 * railway-display-user.test.ts). So root's shell gets only this variable,
 * and the environment is set by the shell that already runs as the
 * command's user.
 */
export const COMMAND_ENV = "AGENT_COMPUTER_COMMAND_ENV";

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Who a bridge command runs as: root (the instance's own user), or a `uid:gid` it drops to. */
export type BridgeUser = "root" | `${number}:${number}`;

/**
 * Runs after the drop, as the command's user: sets the environment
 * COMMAND_ENV carries, then becomes the command ("$@").
 */
const AS_USER = `eval "$(printf %s "$${COMMAND_ENV}" | base64 -d)" || exit 126
unset ${COMMAND_ENV}
exec "$@"`;

/**
 * The bridge's `init_exec` for argv as `user`, with `env`: root's shell
 * (which the bridge starts) runs `guard` first (the display's setup, where
 * there is one: railway-display-user.ts), then drops to the user with
 * setpriv (util-linux, in the computer image) and sets the environment
 * there. A service that does not run as root runs the command as its own
 * user, as the image's USER.
 */
export function bridgeInitAs(user: BridgeUser, argv: string[], env: Record<string, string>, guard = ""): BridgeInit {
  const drop =
    user === "root"
      ? ""
      : `if [ "$(id -u)" = 0 ]; then exec setpriv --reuid=${user.split(":")[0]} --regid=${user.split(":")[1]} --init-groups -- sh -c "$as_user" as-user "$@"; fi\n`;
  const script = `${guard}${guard ? "\n" : ""}as_user=$1; shift\n${drop}exec sh -c "$as_user" as-user "$@"`;
  const command = ["sh", "-c", script, "as-user", AS_USER, ...argv].map(shellQuote).join(" ");
  return { command, env: { [COMMAND_ENV]: Buffer.from(exportLines(env)).toString("base64") } };
}

function exportLines(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => {
      if (!VARIABLE_NAME.test(name)) {
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          `${JSON.stringify(name)} is not an environment variable name.`,
        );
      }
      return `export ${name}=${shellQuote(value)}\n`;
    })
    .join("");
}
