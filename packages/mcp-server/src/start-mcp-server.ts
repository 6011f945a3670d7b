import { homedir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError } from "@agent-computer/core";
import { type ComputerRuntime, createComputerRuntime, runtimeSettingsFromEnv } from "@agent-computer/runtime";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { checkedToken } from "./bearer-token.js";
import { createComputerMcpServer } from "./computer-mcp-server.js";
import { IdleEndingRun } from "./idle-ending-run.js";
import { providerFromEnvironment } from "./provider-from-environment.js";
import { refuseSecondMachine } from "./refuse-second-machine.js";
import { secretsFromEnvironment } from "./secrets-from-environment.js";
import { serveMcpHttp } from "./serve-mcp-http.js";
import { type ChosenStateStore, stateStoreFromEnvironment } from "./state-store-from-environment.js";

/** What `startMcpServer` needs from its process. */
export interface StartMcpServerOptions {
  env: Record<string, string | undefined>;
  /** A line for the person who started it (stderr: stdout carries the protocol). */
  log: (line: string) => void;
  /** The stdio transport, made only when no HTTP port is set. */
  stdio: () => Transport;
}

/** A started server: `stop` ends its run and stops its computer unless another server's run still uses it. */
export interface StartedMcpServer {
  /** The computer this server's bot works on (the runtime's `computerIdFor`). */
  readonly computerId: string;
  /** Idempotent: a second call waits for the first. */
  stop(): Promise<void>;
}

/**
 * The bin's whole start: every setting is checked first (provider keys, the
 * HTTP token, the computer image), so a mistake is one typed error before
 * any computer starts; then one run for the configured bot, served over
 * stdio or HTTP. The state (leases, computer records) lives in a store
 * that outlives the process, so the next launch reconnects to the same
 * computer; the computer suspends when idle and stops with the server.
 */
export async function startMcpServer(options: StartMcpServerOptions): Promise<StartedMcpServer> {
  const { env, log } = options;
  const port = env.MCP_HTTP_PORT?.trim();
  if (port && !/^\d{1,5}$/.test(port)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `MCP_HTTP_PORT must be a port number, got ${JSON.stringify(port)}.`,
    );
  }
  const token = port ? checkedToken(env.MCP_AUTH_TOKEN) : undefined;
  const httpLimits = port ? httpSettings(env) : {};
  const settings = runtimeSettingsFromEnv(env);
  const dataDir = env.AGENT_COMPUTER_DATA_DIR?.trim() || join(homedir(), ".agent-computer", "mcp-server");
  // The image is built before the server starts (--prepare), never here: see provider-from-environment.ts.
  const chosen = await providerFromEnvironment(env, { dataDir, log, whenImageMissing: "refuse" });
  log(`provider: ${chosen.name} (${chosen.reason})`);
  const secrets = await secretsFromEnvironment(env);
  if (secrets) log(`secrets: ${secrets.where}`);
  const state = await stateStoreFromEnvironment(env, dataDir);
  log(`state: ${state.where}`);
  try {
    const runtime = createComputerRuntime({
      provider: chosen.provider,
      stateStore: state.store,
      homeStore: new LocalAgentHomeStore({ dataDir }),
      ...(secrets ? { secrets: secrets.source } : {}),
      ...settings,
    });
    const bot = {
      workspaceId: env.AGENT_COMPUTER_WORKSPACE?.trim() || "mcp",
      botId: env.AGENT_COMPUTER_BOT?.trim() || "mcp",
    };
    const computerId = runtime.computerIdFor(bot);
    await refuseSecondMachine({ provider: chosen.provider, runtime, computerId, stateWhere: state.where });
    const known = (await runtime.leases.getComputer(computerId))?.providerRef;
    log(`computer ${computerId}: ${known ? `reconnects to ${known} on first use` : "starts on first use"}`);
    return await serve({
      ...options,
      runtime,
      computerId,
      state,
      bot,
      token,
      port,
      httpLimits,
      idleMs: settings.idleMs,
    });
  } catch (error) {
    await state.close().catch(() => {});
    throw error;
  }
}

async function serve(
  options: StartMcpServerOptions & {
    runtime: ComputerRuntime;
    computerId: string;
    state: ChosenStateStore;
    bot: { workspaceId: string; botId: string };
    token: string | undefined;
    port: string | undefined;
    httpLimits: ReturnType<typeof httpSettings>;
    idleMs: number;
  },
): Promise<StartedMcpServer> {
  const { env, log, runtime, computerId, state, token, port } = options;
  const serverRun = new IdleEndingRun(runtime, options.bot);
  const shared = {
    run: serverRun.run,
    aroundToolCall: <T>(call: () => Promise<T>) => serverRun.around(call),
    runtime,
    capabilities: runtime.capabilities,
    vision: env.MCP_VISION !== "0",
    onActivity: (e: { tool: string; summary: string }) => log(`activity ${e.tool}: ${e.summary}`),
  };
  let close: () => Promise<void>;
  if (token) {
    const http = await serveMcpHttp({
      ...shared,
      token,
      port: Number(port),
      ...(env.MCP_HTTP_HOST ? { host: env.MCP_HTTP_HOST } : {}),
      ...options.httpLimits,
    });
    log(`agent-computer MCP server at ${http.url} (bearer token required)`);
    close = () => http.close();
  } else {
    const { server } = createComputerMcpServer(shared);
    await server.connect(options.stdio());
    log("agent-computer MCP server on stdio");
    close = () => server.close();
  }
  // After the transport started: a port in use (CONFLICT) leaves no timer behind.
  const stopSuspending = suspendWhenIdle(runtime, serverRun, options.idleMs, log);
  let stopping: Promise<void> | undefined;
  return {
    computerId,
    stop() {
      stopping ??= (async () => {
        stopSuspending();
        await close().catch(() => {});
        try {
          await serverRun.end();
          await stopComputer(runtime, computerId, log);
        } finally {
          await state.close().catch(() => {});
        }
      })();
      return stopping;
    },
  };
}

/**
 * The runtime's idle rule while the server runs (SANDBOX_IDLE_MS, default
 * 15 minutes; 0 never suspends): a look every quarter of the idle time,
 * at most every minute. A client quiet for the idle time first has its run
 * ended (its execution lease would hold the computer up), then the
 * runtime's `suspendIdle` decides by every server's leases and uses. The
 * timer never keeps the process alive.
 */
function suspendWhenIdle(
  runtime: ComputerRuntime,
  serverRun: IdleEndingRun,
  idleMs: number,
  log: (line: string) => void,
): () => void {
  if (idleMs <= 0) return () => {};
  let looking = false;
  const timer = setInterval(
    () => {
      if (looking) return;
      looking = true;
      serverRun
        .endIfIdle(idleMs)
        .then(() => runtime.suspendIdle())
        .then((ids) => {
          for (const id of ids) log(`computer ${id}: suspended after ${idleMs} ms idle`);
        })
        .catch((error: unknown) => log(`idle check failed: ${describe(error)}`))
        .finally(() => {
          looking = false;
        });
    },
    Math.min(60_000, Math.max(1000, Math.floor(idleMs / 4))),
  );
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * On exit the computer stops (home saved, machine stopped), as the
 * runtime's stopComputer does; a run of another server sharing the state
 * store still using it (BOT_BUSY), or a stop or repair already under way
 * (LEASE_HELD, CONFLICT), leaves it running for them, said in one line.
 */
async function stopComputer(runtime: ComputerRuntime, computerId: string, log: (line: string) => void) {
  if (!(await runtime.leases.getComputer(computerId))) return;
  const started = Date.now();
  try {
    await runtime.stopComputer(computerId);
    log(`computer ${computerId}: stopped, home saved (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    if (!AgentComputerError.is(error, "BOT_BUSY", "LEASE_HELD", "CONFLICT")) throw error;
    log(`computer ${computerId}: left running, another server still uses it (${describe(error)})`);
  }
}

function describe(error: unknown): string {
  return AgentComputerError.is(error) ? `${error.code}: ${error.message}` : String(error);
}

/** The HTTP transport's optional settings from the environment, each checked before anything starts. */
function httpSettings(env: Record<string, string | undefined>) {
  const list = (name: string) => {
    const items = env[name]
      ?.split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
    return items && items.length > 0 ? items : undefined;
  };
  const count = (name: string) => {
    const value = env[name]?.trim();
    if (!value) return undefined;
    if (!/^[1-9]\d{0,9}$/.test(value))
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `${name} must be a positive whole number, got ${JSON.stringify(value)}.`,
      );
    return Number(value);
  };
  const allowedHosts = list("MCP_ALLOWED_HOSTS");
  const allowedOrigins = list("MCP_ALLOWED_ORIGINS");
  const maxSessions = count("MCP_MAX_SESSIONS");
  const sessionIdleMs = count("MCP_SESSION_IDLE_MS");
  return {
    ...(allowedHosts ? { allowedHosts } : {}),
    ...(allowedOrigins ? { allowedOrigins } : {}),
    ...(maxSessions ? { maxSessions } : {}),
    ...(sessionIdleMs ? { sessionIdleMs } : {}),
  };
}
