import {
  type ActivityEvent,
  AgentComputerError,
  type BotRun,
  type ComputerRuntime,
  ComputerToolSession,
  callTool,
  computerTools,
  textOf,
} from "@agent-computer/runtime";

/**
 * Where a scripted bot is: `starting` while its first calls provision or
 * resume the computer (that can take a minute), `running` while its run is
 * on, `stopping` while the run ends and its home is checkpointed, `idle`
 * when no run is on (a person may take over then), `failed` when its start
 * failed (`failure` says why).
 */
export type ScriptedBotState = "starting" | "running" | "stopping" | "idle" | "failed";

/**
 * A stand-in for a model-driven bot: it shows a coloured page of its own on
 * its desktop, then runs a shell command every two seconds through the same
 * tools a model calls, until `stop()`. Swap it for your agent loop.
 */
export class ScriptedBot {
  private run: BotRun | undefined;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private starting: Promise<void> | undefined;
  private ending: Promise<void> | undefined;
  private lastFailure: { code: string; message: string } | undefined;
  private call: ((name: string, input: unknown) => Promise<void>) | undefined;

  constructor(
    readonly botId: string,
    private readonly options: {
      runtime: ComputerRuntime;
      workspaceId: string;
      colour: string;
      /** The port its page is served on inside the computer (on the fake provider: on this host). */
      port: number;
      onActivity: (event: ActivityEvent) => void;
    },
  ) {}

  get state(): ScriptedBotState {
    if (this.starting) return "starting";
    if (this.ending) return "stopping";
    if (this.run) return "running";
    return this.lastFailure ? "failed" : "idle";
  }

  /** Why the last start failed, as the runtime's code and message; undefined after a start that worked. */
  get failure(): { code: string; message: string } | undefined {
    return this.lastFailure;
  }

  /** Resolves once no start is under way (whether it worked or not): a screen can be asked for then. */
  async settled(): Promise<void> {
    await this.starting?.catch(() => undefined);
  }

  /** Starts the run; resolves once its page is on the desktop. A second call while starting joins the first. */
  start(): Promise<void> {
    if (this.run && !this.starting) return Promise.resolve();
    this.starting ??= this.begin().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async begin(): Promise<void> {
    const { runtime, workspaceId, colour, port, onActivity } = this.options;
    this.lastFailure = undefined;
    const run = runtime.startRun({ workspaceId, botId: this.botId });
    this.run = run;
    this.stopping = false;
    const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: true, onActivity });
    const tools = computerTools(session);
    const call = async (name: string, input: unknown) => {
      const tool = tools.find((t) => t.name === name);
      if (!tool) return;
      const result = await callTool(tool, input, session);
      if (result.isError) throw new ToolCallFailed(name, textOf(result));
    };
    this.call = call;
    try {
      const page = `<!doctype html><title>${this.botId}</title><body style="margin:0;background:${colour};color:#fff;font:48px sans-serif;display:grid;place-items:center;height:100vh">${this.botId} at work</body>`;
      await call("write_file", { path: "site/index.html", content: page });
      // Its pid is kept so that stop() ends the server: on the fake provider it runs on this host.
      await call("shell", {
        command: `(setsid nohup python3 -m http.server ${port} --bind 127.0.0.1 --directory site >/dev/null 2>&1 < /dev/null & echo $! > site.pid) ; sleep 1`,
      });
      await call("browser_navigate", { url: `http://127.0.0.1:${port}/` });
    } catch (error) {
      this.lastFailure =
        error instanceof ToolCallFailed || AgentComputerError.is(error)
          ? { code: error.code, message: error instanceof ToolCallFailed ? error.reason : error.message }
          : { code: "UNAVAILABLE", message: error instanceof Error ? error.message : String(error) };
      this.run = undefined;
      this.call = undefined;
      await run.end("failed").catch(() => undefined);
      throw error;
    }
    this.loop = (async () => {
      for (let step = 1; !this.stopping; step++) {
        await call("shell", { command: `echo "step ${step} $(date +%T)" >> work.log` }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
  }

  /** Ends the run (its home is checkpointed); a person can take over after. */
  stop(): Promise<void> {
    this.ending ??= this.end().finally(() => {
      this.ending = undefined;
    });
    return this.ending;
  }

  private async end(): Promise<void> {
    await this.settled();
    this.stopping = true;
    await this.loop;
    this.loop = undefined;
    await this.call?.("shell", { command: "kill $(cat site.pid) 2>/dev/null; rm -f site.pid" }).catch(() => undefined);
    this.call = undefined;
    await this.run?.end("completed");
    this.run = undefined;
  }
}

/** A tool call the runtime refused: its stable code and the reason, apart (a tool's error text is "CODE: reason"). */
class ToolCallFailed extends Error {
  readonly code: string;
  readonly reason: string;

  constructor(tool: string, text: string) {
    super(`${tool}: ${text}`);
    const coded = /^([A-Z][A-Z_]+): ([\s\S]*)$/.exec(text);
    this.code = coded?.[1] ?? "UNAVAILABLE";
    this.reason = coded?.[2] ?? text;
  }
}
