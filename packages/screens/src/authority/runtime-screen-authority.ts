import { AgentComputerError } from "@agent-computer/core";
import type { Lease } from "@agent-computer/leases";
import type { ScreenAuthority } from "./screen-authority.js";
import type { ScreenRuntime } from "./screen-runtime.js";

/**
 * The options `terminalEndpoint` of a desktop-runtime desktop takes; core's
 * `DesktopSession` names only `ttlMs`, and other desktops ignore the rest.
 */
interface TerminalEndpointOptions {
  ttlMs?: number;
  /** A live control screen endpoint's id: the terminal lives and dies with it. */
  controlId?: string;
}

/**
 * The `ScreenAuthority` of a `ComputerRuntime`: endpoints come from the
 * bot's desktop (`runtime.desktopFor`, which starts the computer when
 * needed); view is allowed while the computer exists; control while the
 * user-control lease given at issue time is the current one
 * (`runtime.leases.assertCurrent`); terminals (`desktop.terminalEndpoint`,
 * under the control endpoint `controlId` when given) like control. Control
 * and terminal sockets close as soon as the runtime reports
 * `takeover-ended` for that screen.
 *
 * It decides nothing about who the person is: the app checks that before it
 * asks for a capability (and may wrap this authority to re-check).
 */
export function runtimeScreenAuthority(runtime: ScreenRuntime): ScreenAuthority {
  const assertControl = async (request: { computerId: string; botId: string; control?: Lease }): Promise<void> => {
    const lease = request.control;
    if (lease?.kind !== "user-control")
      throw new AgentComputerError("FENCED_OUT", "Control of a screen needs the user-control lease; take over first.");
    if (lease.computerId !== request.computerId || lease.botId !== request.botId)
      throw new AgentComputerError(
        "FENCED_OUT",
        `The user-control lease given is for another screen, not bot "${request.botId}" on computer "${request.computerId}".`,
      );
    try {
      await runtime.leases.assertCurrent(lease);
    } catch (error) {
      // A lease this process's engine never issued: a copy out of a sealed
      // capability after a restart, or from another process.
      if (AgentComputerError.is(error, "INVALID_ARGUMENT"))
        throw new AgentComputerError(
          "LEASE_LOST",
          "This process does not hold the user-control lease of this capability (restarted, or issued elsewhere); take over again and issue a new capability.",
          { cause: error },
        );
      throw error;
    }
  };

  return {
    async open(request) {
      if (request.mode === "control") await assertControl(request);
      const desktop = await runtime.desktopFor({ computerId: request.computerId, botId: request.botId });
      const endpoint = await desktop.screenEndpoint(request.mode, undefined, { ttlMs: request.ttlMs });
      return {
        endpoint,
        revoke: async () => {
          await desktop.revokeEndpoint?.(endpoint.id);
        },
      };
    },

    async openTerminal(request) {
      await assertControl(request);
      const desktop = await runtime.desktopFor({ computerId: request.computerId, botId: request.botId });
      if (!desktop.terminalEndpoint)
        throw new AgentComputerError("UNSUPPORTED", "This computer's desktop has no terminal.");
      const options: TerminalEndpointOptions = { ttlMs: request.ttlMs };
      if (request.controlId !== undefined) options.controlId = request.controlId;
      const endpoint = await desktop.terminalEndpoint(undefined, options);
      return {
        endpoint,
        revoke: async () => {
          await desktop.revokeEndpoint?.(endpoint.id);
        },
      };
    },

    async check(request) {
      if (request.mode === "control") return assertControl(request);
      if (!(await runtime.leases.getComputer(request.computerId)))
        throw new AgentComputerError("NOT_FOUND", `Computer "${request.computerId}" no longer exists.`);
    },

    async inUse({ computerId }) {
      await runtime.noteUse?.(computerId);
    },

    watch(listener) {
      return runtime.on((event) => {
        const botId = event.detail.botId;
        if (event.type === "takeover-ended" && typeof botId === "string")
          listener({ computerId: event.computerId, botId, kind: "control-ended" });
      });
    },
  };
}
