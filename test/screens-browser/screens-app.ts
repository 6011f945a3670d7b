import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Logger, ScreenEndpoint, TerminalEndpoint } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { type DockerHostCheck, dockerProvider } from "@agent-computer/provider-docker";
import { type ComputerRuntime, createComputerRuntime } from "@agent-computer/runtime";
import { createScreens, runtimeScreenAuthority, type ScreenAuthority, type ScreenEvent } from "@agent-computer/screens";
import type { Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];

/**
 * An app as a user would write one: a runtime on real Docker computers, the
 * screens proxy mounted in its HTTP server, and one page (`/app`) that frames
 * viewers and terminals and records the states they post, per frame id.
 */
export interface ScreensApp {
  readonly runtime: ComputerRuntime;
  readonly screens: ReturnType<typeof createScreens>;
  readonly origin: string;
  /** Frame id → src of the `/app` page's iframes. */
  readonly frames: Map<string, string>;
  readonly events: ScreenEvent[];
  readonly logLines: string[];
  /** What the gateway handed out, kept only to prove none of it reaches a log. */
  readonly endpoints: (ScreenEndpoint | TerminalEndpoint)[];
  close(): Promise<void>;
}

export async function startScreensApp(env: DockerHostCheck, dataDir: string): Promise<ScreensApp> {
  const runtime = createComputerRuntime({
    provider: dockerProvider({ docker: env.docker, image: env.image, dataDir }),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
  });
  const logLines: string[] = [];
  const events: ScreenEvent[] = [];
  const endpoints: (ScreenEndpoint | TerminalEndpoint)[] = [];
  const record = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void logLines.push(JSON.stringify({ level, message, fields }));
  const logger: Logger = { debug: record("debug"), info: record("info"), warn: record("warn"), error: record("error") };
  const base = runtimeScreenAuthority(runtime);
  const authority: ScreenAuthority = {
    ...base,
    open: async (request) => {
      const grant = await base.open(request);
      endpoints.push(grant.endpoint);
      return grant;
    },
    openTerminal: async (request) => {
      const grant = await (base.openTerminal as NonNullable<ScreenAuthority["openTerminal"]>)(request);
      endpoints.push(grant.endpoint);
      return grant;
    },
  };
  const screens = createScreens({
    authority,
    secret: new Uint8Array(32).fill(7),
    logger,
    onEvent: (event) => void events.push(event),
  });
  const frames = new Map<string, string>();
  const server = createServer((req, res) => {
    if (screens.handleRequest(req, res)) return;
    if (req.url !== "/app") return void res.writeHead(404).end();
    const iframes = [...frames].map(
      ([name, src]) => `<iframe id="${name}" src="${src}" style="width:640px;height:400px;border:0"></iframe>`,
    );
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(`<!doctype html><body>${iframes.join("")}<script>
window.states = {};
addEventListener("message", (e) => {
  for (const frame of document.querySelectorAll("iframe"))
    if (frame.contentWindow === e.source) (window.states[frame.id] ??= []).push(e.data.state);
});</script>`);
  });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    runtime,
    screens,
    origin,
    frames,
    events,
    logLines,
    endpoints,
    async close() {
      await screens.close();
      server.close();
    },
  };
}

/** Removes a computer and its container, whatever state a failed test left it in. */
export async function removeComputer(app: ScreensApp, env: DockerHostCheck, computerId: string): Promise<void> {
  const record = await app.runtime.leases.getComputer(computerId);
  await app.runtime.deleteComputer(computerId).catch(() => {});
  const id = record?.providerRef?.slice("docker:".length);
  if (id)
    await env.docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => {});
}

/** Waits until the `/app` page's frame `frame` last reported `state`. */
export async function waitForState(
  page: Page,
  frame: string,
  state: string,
  timeoutMs = 30_000,
  events: readonly ScreenEvent[] = [],
): Promise<void> {
  try {
    await page.waitForFunction(
      ([name, wanted]) =>
        ((window as unknown as { states: Record<string, string[]> }).states[name as string] ?? []).at(-1) === wanted,
      [frame, state],
      { timeout: Math.max(timeoutMs, 1), polling: 50 },
    );
  } catch (error) {
    // Say what the frame went through, so a failure shows where it stuck.
    const seen = await page
      .evaluate((name) => (window as unknown as { states: Record<string, string[]> }).states[name] ?? [], frame)
      .catch(() => ["(page gone)"]);
    const proxySaid = events.slice(-12).map(({ type, at: _at, ...rest }) => `${type} ${JSON.stringify(rest)}`);
    throw new Error(
      `frame ${frame} never reached ${state}; its states: ${seen.join(" → ") || "none"}; the proxy's last events:\n${proxySaid.join("\n")}`,
      { cause: error },
    );
  }
}

/** Every secret a log line or event must never hold. */
export function secretsOf(app: ScreensApp, extra: string[]): string[] {
  return [...extra, ...app.endpoints.flatMap((e) => [e.token, e.url, new URL(e.url).host])];
}
