import { randomBytes } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Lease } from "@agent-computer/leases";
import {
  type ActivityEvent,
  AgentComputerError,
  type AgentHomeStore,
  type ComputerRuntime,
} from "@agent-computer/runtime";
import { createFiles, createScreens, runtimeScreenAuthority } from "@agent-computer/screens";
import { computerState } from "./computer-state.js";
import { loadPageAssets } from "./page-assets.js";
import type { ScriptedBot } from "./scripted-bot.js";

const TTL_MS = 30 * 60_000;
const RECENT_LINES = 50;

/**
 * What the console answers for a screen, a terminal or a Files window: its
 * address, or why there is none. A provider without live screens (the fake
 * one) answers `live: false` with `UNSUPPORTED`: that is a fact to show, not
 * a failure of the request.
 */
export type Opened = { live: true; url: string; id: string } | { live: false; code: string; message: string };

/**
 * The web console: one page per Team computer with each bot's live screen,
 * Take control / Release, and for the controlled bot its terminal and Files
 * window, beside the activity feed. No login here: put your app's own
 * authentication in front of every route (a capability is a bearer credential).
 */
export async function startWebConsole(options: {
  runtime: ComputerRuntime;
  homeStore: AgentHomeStore;
  workspaceId: string;
  bots: ScriptedBot[];
  /** Which provider runs the computer and what chose it, for the page's header. */
  provider?: { name: string; reason: string };
  port?: number;
}) {
  const { runtime, homeStore, workspaceId, bots } = options;
  const computerId = runtime.computerIdFor({ workspaceId, botId: bots[0]?.botId ?? "bot" });
  const secret = randomBytes(32);
  const screens = createScreens({ authority: runtimeScreenAuthority(runtime), secret });
  // Uploads are activity too: they reach the feed like the bots' commands.
  const files = createFiles({ runtime, homeStore, secret, onActivity: (event) => onActivity(event) });
  const assets = await loadPageAssets();
  const feed = new Set<ServerResponse>();
  /** Who is controlled: the lease, the capabilities to revoke at release, and the parts to show a reloaded page. */
  const controls = new Map<string, { lease: Lease; revoke: string[]; parts: Record<string, Opened> }>();

  /** The feed's last lines: a page that opens (or reloads) starts with them, not with an empty feed. */
  const recent: string[] = [];
  let published = 0;
  /** Every line of the feed: the bots' commands, a person's uploads, takeovers. */
  const publish = (line: { at: number; botId: string; text: string; ok: boolean }) => {
    // The id lets a page that reconnects skip the lines it already shows.
    const event = `id: ${++published}\ndata: ${JSON.stringify(line)}\n\n`;
    recent.push(event);
    if (recent.length > RECENT_LINES) recent.shift();
    for (const client of feed) client.write(event);
  };
  /** A `computer.command` event: into the feed, and open Files windows refresh now. */
  function onActivity(event: ActivityEvent): void {
    files.notify(event);
    publish({ at: event.at, botId: event.botId, text: event.summary, ok: event.ok });
  }

  const botNamed = (botId: string): ScriptedBot => {
    const bot = bots.find((b) => b.botId === botId);
    if (!bot) throw new AgentComputerError("NOT_FOUND", `There is no bot "${botId}" on this console.`);
    return bot;
  };

  /**
   * A view of one bot's screen. It waits for the bot's start first: the
   * computer is made (or resumed) by the bot's run, so on a first start this
   * answers only once the computer is up, and the page shows it as starting.
   */
  async function viewOf(botId: string) {
    await botNamed(botId).settled();
    const view = await opened(async () => {
      const capability = await screens.issueScreenCapability({ computerId, botId, mode: "view", ttlMs: TTL_MS });
      return { url: capability.viewerUrl, id: capability.id };
    });
    return view.live ? { botId, live: true, viewerUrl: view.url, id: view.id } : { botId, ...view };
  }

  const reads: Record<string, (botId: string) => Promise<unknown>> = {
    /** Each bot's screen to watch (view capabilities: input is dropped), or why it has none. */
    screens: () => Promise.all(bots.map((bot) => viewOf(bot.botId))),
    /** A fresh view of one bot's screen (after its desktop was replaced, or to retry one that failed). */
    screen: (botId) => viewOf(botNamed(botId).botId),
    /** What the page polls: who runs and who is controlled. */
    bots: async () =>
      bots.map((bot) => ({
        botId: bot.botId,
        state: bot.state,
        controlled: controls.has(bot.botId),
        ...(bot.failure ? { failure: bot.failure } : {}),
      })),
    /** The control panel's parts of a bot you control (a reloaded page opens its panel again). */
    control: async (botId) => {
      const held = controls.get(botId);
      if (!held) throw new AgentComputerError("NOT_FOUND", `You do not control ${botId}.`);
      return held.parts;
    },
    /** The computer for the header: its id, state and the provider that runs it. */
    computer: async () => ({
      computerId,
      state: await computerState(runtime, computerId, bots),
      provider: options.provider ? { name: options.provider.name, reason: options.provider.reason } : null,
    }),
  };

  const actions: Record<string, (botId: string) => Promise<unknown>> = {
    /** A control screen, a terminal and a control Files window under one user-control lease; each says if it has none. */
    async takeover(botId) {
      botNamed(botId);
      if (controls.has(botId)) throw new AgentComputerError("CONFLICT", `You already control ${botId}.`);
      const lease = await runtime.takeover({ computerId, botId, holder: "person:console", ttlMs: TTL_MS });
      const control = { computerId, botId, ttlMs: TTL_MS, control: lease };
      const screen = await opened(async () => {
        const capability = await screens.issueScreenCapability({ ...control, mode: "control" });
        return { url: capability.viewerUrl, id: capability.id };
      });
      const terminal = await opened(async () => {
        const capability = await screens.issueTerminalCapability(control);
        return { url: capability.terminalUrl, id: capability.id };
      });
      const window = await opened(async () => {
        const capability = await files.issueFilesCapability({ ...control, mode: "control" });
        return { url: capability.pageUrl, id: capability.id };
      });
      const revoke = [screen, terminal, window].flatMap((part) => (part.live ? [part.id] : []));
      const parts = { screen, terminal, files: window };
      controls.set(botId, { lease, revoke, parts });
      publish({ at: Date.now(), botId, text: "a person took control", ok: true });
      return parts;
    },
    async release(botId) {
      const held = controls.get(botId);
      if (!held) return {};
      controls.delete(botId);
      await runtime.releaseTakeover(held.lease);
      for (const id of held.revoke) {
        files.revoke(id);
        await screens.revoke(id).catch(() => undefined);
      }
      publish({ at: Date.now(), botId, text: "control handed back", ok: true });
      return {};
    },
    async stop(botId) {
      const bot = botNamed(botId);
      if (bot.state === "idle" || bot.state === "failed") return {};
      await bot.stop();
      publish({ at: Date.now(), botId, text: "the bot was stopped", ok: true });
      return {};
    },
    async start(botId) {
      const bot = botNamed(botId);
      if (controls.has(botId))
        throw new AgentComputerError("CONFLICT", `Release control first: you control ${botId}'s screen.`);
      await bot.start();
      publish({ at: Date.now(), botId, text: "the bot was started", ok: true });
      return {};
    },
  };

  const server = createServer((req, res) => {
    if (screens.handleRequest(req, res) || files.handleRequest(req, res)) return;
    const url = new URL(req.url ?? "/", "http://console");
    if (url.pathname === "/") return void res.writeHead(302, { Location: `/computers/${computerId}` }).end();
    if (url.pathname === `/computers/${computerId}`) {
      return void res
        .writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" })
        .end(assets.page(computerId));
    }
    const asset = assets.file(url.pathname);
    if (asset) return void res.writeHead(200, asset.headers).end(asset.body);
    if (url.pathname === "/api/feed") return follow(res);
    const [, api, op = "", botId = ""] = url.pathname.split("/");
    const route = api !== "api" ? undefined : req.method === "POST" ? actions[op] : reads[op];
    if (!route) return void res.writeHead(404).end();
    answer(res, () => route(decodeURIComponent(botId)));
  });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });

  function follow(res: ServerResponse): void {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store" });
    res.write(": open\n\n");
    for (const event of recent) res.write(event);
    feed.add(res);
    res.on("close", () => feed.delete(res));
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/computers/${computerId}`;
  return {
    url,
    computerId,
    /** Give this to the bots' tool sessions: their commands feed the page and refresh its Files window. */
    onActivity,
    async close() {
      for (const client of feed) client.end();
      files.close();
      await screens.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Runs `work`; a refusal becomes `live: false` with its code and message (UNSUPPORTED: the provider has none). */
async function opened(work: () => Promise<{ url: string; id: string }>): Promise<Opened> {
  try {
    return { live: true, ...(await work()) };
  } catch (error) {
    return { live: false, ...codeAndMessage(error) };
  }
}

function codeAndMessage(error: unknown): { code: string; message: string } {
  if (AgentComputerError.is(error)) return { code: error.code, message: error.message };
  return { code: "UNAVAILABLE", message: error instanceof Error ? error.message : String(error) };
}

/** The HTTP status of a refusal: the page shows the code and message whatever it is. */
const STATUS_OF: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  BOT_BUSY: 409,
  LEASE_HELD: 409,
  UNSUPPORTED: 501,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
};

/** JSON out; a refusal as its code and the message a person can act on ("Stop the bot first"). */
function answer(res: ServerResponse, work: () => Promise<unknown>): void {
  // Through a promise: a synchronous throw (a malformed %-escape in the path) is a refusal too, not a crash.
  Promise.resolve()
    .then(work)
    .then(
      (body) =>
        res
          .writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-store" })
          .end(JSON.stringify(body)),
      (error) => {
        const refusal = codeAndMessage(error);
        res
          .writeHead(STATUS_OF[refusal.code] ?? 500, { "Content-Type": "application/json" })
          .end(JSON.stringify(refusal));
      },
    );
}
