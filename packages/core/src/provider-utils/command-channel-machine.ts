import type { Readable } from "node:stream";
import type { DesktopOptions } from "../contract/desktop-options.js";
import type { DesktopSession } from "../contract/desktop-session.js";
import type { ExecRequest } from "../contract/exec-request.js";
import type { ExecResult } from "../contract/exec-result.js";
import type { Machine } from "../contract/machine.js";
import type { MachineFiles } from "../contract/machine-files.js";
import type { OpContext } from "../contract/op-context.js";
import type { ProviderRef } from "../contract/provider-ref.js";
import { enterOperation } from "./enter-operation.js";
import { ExecHomeFiles } from "./exec-home-files.js";
import { type MachineCommand, machineCommandOf, parseExecRequest } from "./machine-command.js";
import type { MachineDesktops } from "./machine-desktops.js";
import { machineFilesOverHome } from "./machine-files-over-home.js";
import { checkPortRequest } from "./port-request.js";

/**
 * A machine reached through a command channel (Docker's exec API,
 * Kubernetes' pods/exec, a hosted sandbox's process API), with its home a
 * folder inside it: `exec` and the home's list, read and write are written
 * here once, over the one method a provider implements for its transport,
 * `runCommand`. The provider adds how the home moves in and out, how a
 * port is reached, and its machine's lifecycle; with `desktops`, the machine's `openDesktop` and
 * `quiesceDesktops` are theirs (without, it has none, as the contract
 * wants of a provider without the desktop capability).
 */
export abstract class CommandChannelMachine implements Machine {
  abstract readonly ref: ProviderRef;
  readonly files: MachineFiles;
  declare readonly openDesktop?: (botId: string, ctx?: OpContext, opts?: DesktopOptions) => Promise<DesktopSession>;
  declare readonly quiesceDesktops?: (ctx?: OpContext) => Promise<() => Promise<void>>;
  private importing: Promise<unknown> = Promise.resolve();

  constructor(
    readonly workspacePath: string,
    /** Makes the desktops of this machine, driven through its `exec` (the Linux desktop runtime). */
    desktops?: (machine: CommandChannelMachine) => MachineDesktops,
  ) {
    this.files = machineFilesOverHome({
      // Through this call's context, so its abort and deadline reach the helper commands.
      home: (context, what) =>
        new ExecHomeFiles(workspacePath, (argv, options) =>
          this.runCommand({ argv, workingDir: workspacePath, ...options }, context, what),
        ),
      exportWorkspace: (context) => this.exportHome(context),
      importWorkspace: (tar, context) => this.importHome(tar, context),
    });
    if (desktops) {
      const runtime = desktops(this);
      this.openDesktop = (botId, ctx, opts) => runtime.openDesktop(botId, ctx, opts);
      this.quiesceDesktops = (ctx) => runtime.quiesceDesktops(ctx);
    }
  }

  async exec(req: ExecRequest, ctx?: OpContext): Promise<ExecResult> {
    const request = parseExecRequest(req);
    const context = enterOperation(ctx, "command");
    return this.runCommand(machineCommandOf(request, this.workspacePath), context, "run a command");
  }

  async portUrl(port: number, opts: { private: boolean }, ctx?: OpContext): Promise<string> {
    checkPortRequest(port, opts);
    return this.urlOfPort(port, enterOperation(ctx, "port lookup"));
  }

  abstract stop(ctx?: OpContext): Promise<void>;
  abstract destroy(ctx?: OpContext): Promise<void>;

  /**
   * Runs `command` in the machine as the computer's user, under the call's
   * context (its signal kills the process tree), turning the transport's
   * failures into the contract's errors; `what` names the call in them.
   */
  protected abstract runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult>;
  /** A URL that reaches `port` inside the machine; the port and the context are checked. */
  protected abstract urlOfPort(port: number, context: OpContext): Promise<string>;
  /** The whole home as a tar stream; the context is checked and not yet done. */
  protected abstract exportHome(context: OpContext): Promise<Readable>;
  /** Replaces the home whole with `tar`; the context is checked and `tar` is a stream. */
  protected abstract importHome(tar: Readable, context: OpContext): Promise<void>;

  /**
   * Runs `work` after every import started before it on this machine has
   * ended, whatever became of them: two imports never swap one home at once.
   * A provider's `importHome` wraps its work in it where its machine could
   * otherwise interleave them.
   */
  protected importInTurn(work: () => Promise<void>): Promise<void> {
    const next = this.importing.then(work, work);
    this.importing = next.catch(() => {});
    return next;
  }
}
