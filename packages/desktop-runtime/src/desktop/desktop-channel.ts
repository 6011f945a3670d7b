import { AgentComputerError, loggerOf, type Machine, type OpContext } from "@agent-computer/core";
import { DesktopServiceClient, ServiceUnreachable } from "../service/desktop-service-client.js";
import { SERVICE_PATH } from "../service/service-protocol.js";
import {
  callTimeoutMs,
  type DesktopCallOptions,
  type DesktopCommandRun,
  runDesktopCommand,
  settleLines,
} from "./desktop-command.js";
import { gatewayUrl } from "./gateway-url.js";
import { SCREEN_GATEWAY_PORT } from "./screen-gateway-port.js";

type PortUrl = NonNullable<Machine["portUrl"]>;

/** How desktop calls reach the computer: the resident service where it can, or exec per call. */
export type DesktopTransport = "service" | "exec";

/** After the service could not be reached, calls go through exec this long before it is tried again. */
const SERVICE_RETRY_MS = 30_000;
/** `desktop service` starts the gateway when none runs. */
const HAND_OVER_TIMEOUT_MS = 45_000;
/**
 * The image's `desktop` (bin/desktop) is a shell script that execs the
 * image's execute-only node: until it does, the shell is dumpable, and a
 * process of the bot's user can open its stdin through /proc/<pid>/fd/0
 * and read the service key the host sends there (issue 45, finding 6).
 * The hand-over runs that node directly instead, non-dumpable from its
 * first instruction, on every machine of the image (the Dockerfile
 * installs both paths); a runtime given another `command` (a host without
 * the image) hands over through that command.
 */
export const SERVICE_HAND_OVER_COMMAND = Object.freeze([
  "/opt/agent-computer/libexec/agent-computer-node",
  "/opt/agent-computer/lib/desktop.mjs",
]);

/**
 * Where one machine's desktop calls go (docs/architecture.md §4). Every verb
 * is sent to the resident service over one websocket through the machine's
 * `portUrl`; a machine without `portUrl`, a computer whose service cannot
 * be started or reached, or `transport: "exec"` runs the `desktop` command
 * through exec instead, with the same lines and the same errors. A call
 * whose connection dropped after it was sent is never run again another
 * way: it may have taken effect.
 */
export class DesktopChannel {
  private readonly service?: DesktopServiceClient;
  private serviceDownUntil = 0;

  constructor(
    private readonly machine: Pick<Machine, "exec" | "workspacePath" | "portUrl">,
    private readonly command: readonly string[],
    transport: DesktopTransport,
  ) {
    if (transport === "service" && machine.portUrl) {
      this.service = new DesktopServiceClient({
        url: async (ctx) =>
          gatewayUrl(
            await (machine.portUrl as PortUrl).call(machine, SCREEN_GATEWAY_PORT, { private: true }, ctx),
            SERVICE_PATH,
          ),
        handOver: async (key, ctx) => {
          const handOver = command.length === 1 && command[0] === "desktop" ? SERVICE_HAND_OVER_COMMAND : command;
          await runDesktopCommand(machine, handOver, ["service"], ctx, {
            defaultTimeoutMs: HAND_OVER_TIMEOUT_MS,
            stdin: new TextEncoder().encode(key),
          });
        },
      });
    }
  }

  /**
   * Runs one verb with `--home` added; the lines mean what `settleLines` says.
   * `requireService`: a call that hands out a capability on the gateway's
   * port (screen and terminal grants) is refused when the service did not
   * prove itself there, so no token is pointed at a port that a process
   * without the key may hold (a bot that killed the gateway and took it).
   * A page action typing a secret is refused too: through exec its value
   * would pass through the `desktop` shell script's stdin, which a process
   * of the same user can open.
   */
  async run(
    args: string[],
    ctx: OpContext,
    options: DesktopCallOptions & { requireService?: boolean },
  ): Promise<DesktopCommandRun> {
    const argv = [...args, "--home", this.machine.workspacePath];
    if (this.service && (options.requireService || Date.now() >= this.serviceDownUntil)) {
      const timeoutMs = callTimeoutMs(ctx, options.defaultTimeoutMs);
      let answer: Awaited<ReturnType<DesktopServiceClient["call"]>> | undefined;
      try {
        answer = await this.service.call({
          argv,
          timeoutMs,
          ctx,
          ...(options.stdin ? { stdin: new TextDecoder().decode(options.stdin) } : {}),
        });
      } catch (error) {
        if (!(error instanceof ServiceUnreachable)) throw error;
        if (options.requireService) {
          throw new AgentComputerError(
            "UNAVAILABLE",
            `Nothing was sent (${args[0]} needs the desktop service): ${error.message} The screen gateway must prove it holds this host's key first.`,
          );
        }
        // Nothing was sent: this call may go through exec.
        this.serviceDownUntil = Date.now() + SERVICE_RETRY_MS;
        loggerOf(ctx).warn("desktop service unreachable; using exec", { reason: error.message });
      }
      if (answer) {
        const settled = settleLines(answer.lines, options.allowCut === true, answer.cut);
        if (settled) return settled;
        throw new AgentComputerError("UNAVAILABLE", `The desktop call "${args[0]}" ended without an answer.`);
      }
    }
    return runDesktopCommand(this.machine, this.command, argv, ctx, options);
  }

  /** Closes the service connection (the machine is going away). */
  close(): void {
    this.service?.close();
  }
}
