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
import { consolePage } from "./console-page.js";
import type { ScriptedBot } from "./scripted-bot.js";

const TTL_MS = 30 * 60_000;

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
  port?: number;
}) {
  const { runtime, homeStore, workspaceId, bots } = options;
  const computerId = runtime.computerIdFor({ workspaceId, botId: bots[0]?.botId ?? "bot" });
  const secret = randomBytes(32);
  const screens = createScreens({ authority: runtimeScreenAuthority(runtime), secret });
  // Uploads are activity too: they reach the feed like the bots' commands.
  const files = createFiles({ runtime, homeStore, secret, onActivity: (event) => onActivity(event) });
  const feed = new Set<ServerResponse>();
  const controls = new Map<string, { lease: Lease; revoke: string[] }>();

  /** Every line of the feed: the bots' commands, a person's uploads, takeovers. */
  const publish = (line: { at: number; botId: string; text: string; ok: boolean }) => {
    for (const client of feed) client.write(`data: ${JSON.stringify(line)}\n\n`);
  };
  /** A `computer.command` event: into the feed, and open Files windows refresh now. */
  function onActivity(event: ActivityEvent): void {
    files.notify(event);
    publish({ at: event.at, botId: event.botId, text: event.summary, ok: event.ok });
  }

  const routes: Record<string, (botId: string) => Promise<unknown>> = {
    /** Each bot's live screen, to watch (view capabilities: input is dropped). */
    async screens() {
      const list = [];
      for (const { botId } of bots)
        list.push({
          botId,
          ...(await screens.issueScreenCapability({ computerId, botId, mode: "view", ttlMs: TTL_MS })),
        });
      return list;
    },
    /** A fresh view of one bot's screen, after its desktop was replaced (a run ended, the computer restarted). */
    async screen(botId) {
      return screens.issueScreenCapability({ computerId, botId, mode: "view", ttlMs: TTL_MS });
    },
    /** What the page polls: who runs and who is controlled. */
    async bots() {
      return bots.map((bot) => ({ botId: bot.botId, state: bot.state, controlled: controls.has(bot.botId) }));
    },
    async takeover(botId) {
      const lease = await runtime.takeover({ computerId, botId, holder: "person:console", ttlMs: TTL_MS });
      const control = { computerId, botId, ttlMs: TTL_MS, control: lease };
      const screen = await screens.issueScreenCapability({ ...control, mode: "control" });
      const terminal = await screens.issueTerminalCapability(control);
      const window = await files.issueFilesCapability({ ...control, mode: "control" });
      controls.set(botId, { lease, revoke: [screen.id, terminal.id, window.id] });
      publish({ at: Date.now(), botId, text: "a person took control", ok: true });
      return { viewerUrl: screen.viewerUrl, terminalUrl: terminal.terminalUrl, filesUrl: window.pageUrl };
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
      await bots.find((b) => b.botId === botId)?.stop();
      publish({ at: Date.now(), botId, text: "the bot was stopped", ok: true });
      return {};
    },
  };

  const server = createServer((req, res) => {
    if (screens.handleRequest(req, res) || files.handleRequest(req, res)) return;
    const url = new URL(req.url ?? "/", "http://console");
    if (url.pathname === "/") return void res.writeHead(302, { Location: `/computers/${computerId}` }).end();
    if (url.pathname === `/computers/${computerId}`) {
      const page = consolePage(computerId);
      return void res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(page);
    }
    if (url.pathname === "/api/feed") return follow(res);
    const [, api, op, botId = ""] = url.pathname.split("/");
    const route = api === "api" && op !== undefined ? routes[op] : undefined;
    if (!route || (req.method === "POST") === ["screens", "screen", "bots"].includes(op ?? ""))
      return void res.writeHead(404).end();
    answer(res, () => route(botId));
  });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });

  function follow(res: ServerResponse): void {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store" });
    res.write(": open\n\n");
    feed.add(res);
    res.on("close", () => feed.delete(res));
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
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

/** JSON out; a refusal as its code and the message a person can act on ("Stop the bot first"). */
function answer(res: ServerResponse, work: () => Promise<unknown>): void {
  work().then(
    (body) => res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(body)),
    (error) => {
      const e = AgentComputerError.is(error) ? error : new AgentComputerError("UNAVAILABLE", String(error));
      const status = e.code === "BOT_BUSY" || e.code === "LEASE_HELD" ? 409 : 500;
      res
        .writeHead(status, { "Content-Type": "application/json" })
        .end(JSON.stringify({ code: e.code, message: e.message }));
    },
  );
}
