import {
  type ActivityEvent,
  type BotRun,
  type ComputerRuntime,
  ComputerToolSession,
  callTool,
  computerTools,
  textOf,
} from "@agent-computer/runtime";

/**
 * A stand-in for a model-driven bot: it shows a coloured page of its own on
 * its desktop, then runs a shell command every two seconds through the same
 * tools a model calls, until `stop()`. Swap it for your agent loop.
 */
export class ScriptedBot {
  private run: BotRun | undefined;
  private stopping = false;
  private loop: Promise<void> | undefined;

  constructor(
    readonly botId: string,
    private readonly options: {
      runtime: ComputerRuntime;
      workspaceId: string;
      colour: string;
      port: number;
      onActivity: (event: ActivityEvent) => void;
    },
  ) {}

  /** "running" while its run is on, else "idle" (a person may take over then). */
  get state(): "running" | "idle" {
    return this.run ? "running" : "idle";
  }

  /** Starts the run; resolves once its page is on the desktop. */
  async start(): Promise<void> {
    const { runtime, workspaceId, colour, port, onActivity } = this.options;
    const run = runtime.startRun({ workspaceId, botId: this.botId });
    this.run = run;
    this.stopping = false;
    const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: true, onActivity });
    const tools = computerTools(session);
    const call = async (name: string, input: unknown) => {
      const tool = tools.find((t) => t.name === name);
      if (!tool) return;
      const result = await callTool(tool, input, session);
      if (result.isError) throw new Error(`${name}: ${textOf(result)}`);
    };
    const page = `<!doctype html><title>${this.botId}</title><body style="margin:0;background:${colour};color:#fff;font:48px sans-serif;display:grid;place-items:center;height:100vh">${this.botId} at work</body>`;
    await call("write_file", { path: "site/index.html", content: page });
    await call("shell", {
      command: `(setsid nohup python3 -m http.server ${port} --bind 127.0.0.1 --directory site >/dev/null 2>&1 < /dev/null &) ; sleep 1`,
    });
    await call("browser_navigate", { url: `http://127.0.0.1:${port}/` });
    this.loop = (async () => {
      for (let step = 1; !this.stopping; step++) {
        await call("shell", { command: `echo "step ${step} $(date +%T)" >> work.log` }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
  }

  /** Ends the run (its home is checkpointed); a person can take over after. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop;
    await this.run?.end("completed");
    this.run = undefined;
  }
}
