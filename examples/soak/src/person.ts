import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { Lease } from "@agent-computer/leases";
import { AgentComputerError, type ComputerRuntime } from "@agent-computer/runtime";
import { createScreens, runtimeScreenAuthority, type Screens } from "@agent-computer/screens";
import { openAndCloseScreen } from "./screen-viewer.js";
import type { SoakLedger } from "./soak-ledger.js";
import { StepFailure } from "./step-failure.js";

/** How long the person keeps a screen they took over. */
const HOLD_MS = 300;
/** The person's user-control lease; far longer than they hold it. */
const TAKEOVER_TTL_MS = 60_000;
const SCREEN_TIMEOUT_MS = 30_000;

/** A bot waiting for the person: aborted when the person cannot answer. */
interface Waiting {
  readonly controller: AbortController;
  /** The unexpected failure of the person's side, once they are done. */
  readonly done: Promise<StepFailure | undefined>;
  finish(failure: StepFailure | undefined): void;
}

/**
 * The scripted person of the soak: watches bots' screens through the
 * screens package (a view capability, the proxy, the computer's gateway),
 * and answers a bot's request_takeover with a takeover, a control screen,
 * a short hold and a release, as an app's UI would.
 */
export class Person {
  private readonly waiting = new Map<string, Waiting>();
  private readonly unsubscribe: () => void;

  private constructor(
    private readonly runtime: ComputerRuntime,
    private readonly computerId: string,
    private readonly ledger: SoakLedger,
    private readonly screens: Screens,
    private readonly server: Server,
  ) {
    this.unsubscribe = runtime.on((event) => {
      if (event.type === "takeover-requested" && event.computerId === computerId)
        void this.answer(String(event.detail.botId));
    });
  }

  /** Mounts screens on a local HTTP server, as an app would. */
  static async start(runtime: ComputerRuntime, computerId: string, ledger: SoakLedger): Promise<Person> {
    const screens = createScreens({ authority: runtimeScreenAuthority(runtime), secret: randomBytes(32) });
    const server = createServer((request, response) => {
      if (!screens.handleRequest(request, response)) response.writeHead(404).end();
    });
    server.on("upgrade", (request, socket, head) => {
      if (!screens.handleUpgrade(request, socket, head)) socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return new Person(runtime, computerId, ledger, screens, server);
  }

  /**
   * Call before a bot asks for a takeover. The returned signal aborts the
   * bot's request if the person cannot take over; `done` settles once the
   * person released the screen, with their unexpected failure if any.
   */
  expectTakeover(botId: string): { signal: AbortSignal; done: Promise<StepFailure | undefined> } {
    let finish: (failure: StepFailure | undefined) => void = () => {};
    const done = new Promise<StepFailure | undefined>((resolve) => {
      finish = resolve;
    });
    const waiting: Waiting = { controller: new AbortController(), done, finish };
    this.waiting.set(botId, waiting);
    return { signal: waiting.controller.signal, done };
  }

  /** A person opens a bot's screen to watch it work, and closes it again. */
  async viewScreen(botId: string): Promise<void> {
    await this.ledger.timed("screen_view", () => this.openScreen(botId, "view", "screen_view"));
  }

  async close(): Promise<void> {
    this.unsubscribe();
    await this.screens.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async openScreen(botId: string, mode: "view" | "control", op: string, control?: Lease): Promise<void> {
    let capability: Awaited<ReturnType<Screens["issueScreenCapability"]>>;
    try {
      capability = await this.screens.issueScreenCapability({
        computerId: this.computerId,
        botId,
        mode,
        ttlMs: SCREEN_TIMEOUT_MS * 2,
        ...(control ? { control } : {}),
      });
    } catch (error) {
      throw asStepFailure(op, error);
    }
    try {
      const origin = `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
      await openAndCloseScreen(`${origin}${capability.url}`, op, SCREEN_TIMEOUT_MS);
    } finally {
      await this.screens.revoke(capability.id).catch(() => {});
    }
  }

  /** Takes over, opens the control screen, holds it a moment, releases. */
  private async answer(botId: string): Promise<void> {
    const waiting = this.waiting.get(botId);
    this.waiting.delete(botId);
    const started = performance.now();
    let failure: StepFailure | undefined;
    const note = (error: unknown, op: string) => {
      const f = asStepFailure(op, error);
      const expected = this.ledger.error({ botId, step: "takeover", op: f.op, code: f.code, message: f.message });
      if (!expected) failure ??= f;
    };
    let lease: Lease | undefined;
    try {
      lease = await this.runtime.takeover({
        computerId: this.computerId,
        botId,
        holder: `soak-person-${botId}`,
        ttlMs: TAKEOVER_TTL_MS,
      });
      const control = lease;
      await this.ledger
        .timed("screen_control", () => this.openScreen(botId, "control", "screen_control", control))
        .catch((error) => note(error, "screen_control"));
      await sleep(HOLD_MS);
    } catch (error) {
      note(error, "takeover");
    } finally {
      if (lease) await this.runtime.releaseTakeover(lease).catch((error) => note(error, "release_takeover"));
      this.ledger.latency("takeover_answer", performance.now() - started);
    }
    // Without a takeover the bot would wait for ever: end its request.
    if (!lease) waiting?.controller.abort();
    waiting?.finish(failure);
  }
}

export function asStepFailure(op: string, error: unknown): StepFailure {
  if (error instanceof StepFailure) return error;
  if (AgentComputerError.is(error)) return new StepFailure(op, error.code, error.message);
  return new StepFailure(op, "EXCEPTION", error instanceof Error ? error.message : String(error));
}
