import { HttpAnswer } from "@agent-computer/testing/emulator";
import type { EmulatedSandboxState } from "./daytona-emulator-options.js";
import type { Sandbox } from "./daytona-sandbox.js";

/** What the state machine tells and waits on. */
export interface LifecycleHost {
  /** A state change, told on the events channel. */
  changed(sandbox: Sandbox, oldState: EmulatedSandboxState): void;
  /** Added to every start: a slow start. */
  slowStart(): Promise<void>;
}

/** The state a transition ends in: the API's desiredState while it runs. */
const DESIRED: Partial<Record<EmulatedSandboxState, EmulatedSandboxState>> = {
  creating: "started",
  starting: "started",
  restoring: "started",
  resuming: "started",
  snapshotting: "started",
  forking: "started",
  stopping: "stopped",
  archiving: "archived",
  pausing: "paused",
  destroying: "destroyed",
};

/** Error answers of the API's sandbox service (apps/api/src/exceptions/*.ts). */
const stateChangeInProgress = () => new HttpAnswer(409, "Sandbox state change in progress");

/**
 * The sandbox state machine as apps/api/src/sandbox/services/sandbox.service.ts
 * (daytonaio/daytona v0.190.0) runs it: a request sets the desired state and
 * marks the sandbox pending; the work runs; the state follows. The checks
 * each request makes come first, with their statuses and messages.
 */
export class SandboxLifecycle {
  constructor(private readonly host: LifecycleHost) {}

  /** The desired state the API reports (sandbox.service.ts getExpectedDesiredStateForState, roughly: the state a change heads for). */
  desiredStateOf(sandbox: Sandbox): string {
    return DESIRED[sandbox.state] ?? sandbox.state;
  }

  /**
   * start (sandbox.service.ts start, :2042-2110): a started one is answered
   * as it is; a state change under way is 409; only stopped, archived,
   * archiving or paused ones start, else 400 "Sandbox is not in valid
   * state"; a paused sandbox resumes only for the VM classes (else 422).
   */
  checkStart(sandbox: Sandbox): "started" | "start" {
    if (sandbox.state === "started" && !sandbox.pending) return "started";
    if (sandbox.state === "error") throw new HttpAnswer(400, "Sandbox is in an errored state");
    const desired = this.desiredStateOf(sandbox);
    const towardsArchive = desired === "archived" && (sandbox.state === "stopped" || sandbox.state === "archiving");
    if (sandbox.state !== desired && !towardsArchive) throw stateChangeInProgress();
    if (!["stopped", "archived", "archiving", "paused"].includes(sandbox.state)) {
      throw new HttpAnswer(400, "Sandbox is not in valid state");
    }
    if (sandbox.pending) throw stateChangeInProgress();
    if (sandbox.state === "paused" && sandbox.sandboxClass === "container") {
      throw new HttpAnswer(422, "Resuming is not supported for this sandbox");
    }
    return "start";
  }

  /**
   * stop (sandbox.service.ts stop, :2112-2147): a change under way is 409;
   * anything but started or paused is 400 "Sandbox is not in a stoppable
   * state" (a stopped sandbox included).
   */
  checkStop(sandbox: Sandbox): void {
    if (sandbox.state === "error") throw new HttpAnswer(400, "Sandbox is in an errored state");
    if (sandbox.state !== this.desiredStateOf(sandbox)) throw stateChangeInProgress();
    if (sandbox.state !== "started" && sandbox.state !== "paused") {
      throw new HttpAnswer(400, "Sandbox is not in a stoppable state");
    }
    if (sandbox.pending) throw stateChangeInProgress();
  }

  /** archive (sandbox.service.ts archive): only a stopped sandbox. */
  checkArchive(sandbox: Sandbox): void {
    if (sandbox.pending) throw stateChangeInProgress();
    if (sandbox.state !== "stopped") throw new HttpAnswer(400, "Sandbox is not stopped");
  }

  /** pause (sandbox.service.ts pause, :2149-2190): started only; the VM classes only (422 for a container). */
  checkPause(sandbox: Sandbox): void {
    if (sandbox.state !== "started") throw new HttpAnswer(400, "Sandbox must be in started state to pause");
    if (sandbox.pending) throw stateChangeInProgress();
    if (sandbox.sandboxClass === "container") {
      throw new HttpAnswer(422, "Pausing is not supported for this sandbox");
    }
  }

  /** destroy (sandbox.service.ts destroy, :2013-2040): 409 while a change is pending. */
  checkDestroy(sandbox: Sandbox): void {
    if (sandbox.pending) throw stateChangeInProgress();
  }

  /** Runs one state change after the one under way: `during` while it works, `after` once done (or "error"). */
  transition(
    sandbox: Sandbox,
    during: EmulatedSandboxState,
    work: () => Promise<void>,
    after: EmulatedSandboxState,
  ): Promise<void> {
    sandbox.pendingChanges++;
    const run = sandbox.transition.then(async () => {
      try {
        if (sandbox.state === "destroyed") return;
        this.setState(sandbox, during);
        try {
          await work();
          if (sandbox.state === during) this.setState(sandbox, after);
        } catch (error) {
          sandbox.errorReason = (error as Error).message.slice(0, 300);
          if (sandbox.state === during) this.setState(sandbox, "error");
        }
      } finally {
        sandbox.pendingChanges--;
      }
    });
    sandbox.transition = run.catch(() => {});
    return run;
  }

  /** A start as the runner does it: from archive recreates the container, from paused unpauses it. */
  start(sandbox: Sandbox): Promise<void> {
    const from = sandbox.state;
    const during: EmulatedSandboxState =
      from === "archived" || from === "archiving" ? "restoring" : from === "paused" ? "resuming" : "starting";
    return this.transition(
      sandbox,
      during,
      async () => {
        if (during === "restoring") await sandbox.createContainer(sandbox.archiveImage as string);
        else if (during === "resuming") await sandbox.unpauseContainer();
        else await sandbox.startContainer();
        await this.host.slowStart();
      },
      "started",
    );
  }

  setState(sandbox: Sandbox, state: EmulatedSandboxState): void {
    const oldState = sandbox.state;
    sandbox.state = state;
    sandbox.history.push(state);
    sandbox.updatedAt = new Date().toISOString();
    this.host.changed(sandbox, oldState);
  }
}
