import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { CliError } from "./cli-error.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { identify, isAlive, type ProcessIdentity, signal, waitGone } from "./process-status.js";
import { preferredRelayPort } from "./proxy-relay.js";

/** Upstream proxy credentials, read from `desktop start`'s stdin and handed to the relay's. */
export interface ProxyCredentials {
  readonly username: string;
  readonly password: string;
}

/** How long a relay has to bind and say so. */
const READY_MS = 10_000;

/**
 * The proxy a bot's Chromium gets: with credentials, a fresh relay on
 * 127.0.0.1 (port derived from the profile path, recorded on the slot) in
 * front of `upstream`; without, `upstream` itself; none without a proxy. A
 * relay left from before is stopped first: the credentials may have changed.
 */
export async function browserProxyFor(
  dir: string,
  record: DisplaySlotRecord,
  profile: string,
  upstream: string | undefined,
  credentials: ProxyCredentials | undefined,
): Promise<string | undefined> {
  if (!(await stopProxyRelay(record))) {
    throw new CliError("UNAVAILABLE", `The previous proxy relay of ${record.bot} did not stop; try again.`);
  }
  delete record.proxyRelay;
  delete record.proxyRelayPort;
  if (!upstream) return undefined;
  if (!credentials) return upstream;
  const { process: relay, port } = await startProxyRelay(dir, record.bot, profile, upstream, credentials);
  record.proxyRelay = relay;
  record.proxyRelayPort = port;
  return `http://127.0.0.1:${port}`;
}

/**
 * Starts `desktop proxy-relay` detached (it outlives this command, and it
 * does not carry the exec's kill marker), writes the upstream and the
 * credentials to its stdin, and waits for the port it bound.
 */
async function startProxyRelay(
  dir: string,
  bot: string,
  profile: string,
  upstream: string,
  credentials: ProxyCredentials,
): Promise<{ process: ProcessIdentity; port: number }> {
  const logFile = join(dir, "proxy-relay.log");
  const log = openSync(logFile, "w", 0o600);
  const { AGENT_COMPUTER_EXEC: _marker, ...inherited } = process.env;
  const bundle = fileURLToPath(import.meta.url);
  const child = spawn(
    process.execPath,
    [bundle, "proxy-relay", "--bot", bot, "--port", String(preferredRelayPort(profile))],
    { detached: true, stdio: ["pipe", "pipe", log], env: inherited },
  );
  closeSync(log); // the relay has its own copy
  const stdin = child.stdin as Writable;
  const stdout = child.stdout as Readable;
  stdin.on("error", () => {});
  stdin.end(JSON.stringify({ upstream, username: credentials.username, password: credentials.password }));
  const identity = child.pid === undefined ? undefined : identify(child.pid);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error("timeout")), READY_MS);
      stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8");
        const line = out.split("\n")[0] as string;
        if (!out.includes("\n")) return;
        clearTimeout(timer);
        try {
          const ready = JSON.parse(line) as { ok?: boolean; port?: number; error?: { message?: string } };
          if (ready.ok && Number.isInteger(ready.port)) resolve(ready.port as number);
          else reject(new Error(ready.error?.message ?? "the relay refused to start"));
        } catch {
          reject(new Error("the relay printed no port"));
        }
      });
      child.once("close", () => {
        clearTimeout(timer);
        reject(new Error("the relay exited"));
      });
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    if (!identity) throw new Error("the relay exited");
    stdout.destroy();
    child.unref();
    return { process: identity, port };
  } catch (error) {
    signal(identity, "SIGKILL");
    throw new CliError(
      "UNAVAILABLE",
      `The proxy relay of ${bot} did not start (${(error as Error).message}).${tailOf(logFile)}`,
    );
  }
}

/** Stops the bot's relay (SIGTERM, then SIGKILL); true when none runs. */
export async function stopProxyRelay(record: DisplaySlotRecord): Promise<boolean> {
  if (!isAlive(record.proxyRelay)) return true;
  signal(record.proxyRelay, "SIGTERM");
  if (await waitGone([record.proxyRelay], 3000)) return true;
  signal(record.proxyRelay, "SIGKILL");
  return waitGone([record.proxyRelay], 2000);
}

/** The relay's last log lines (it never logs credentials, headers or URLs' paths). */
function tailOf(file: string): string {
  try {
    const tail = readFileSync(file, "utf8").trim().split("\n").slice(-4).join("\n");
    return tail ? ` Its log:\n${tail}` : "";
  } catch {
    return "";
  }
}

/**
 * `desktop start --proxy-credentials stdin`: the credentials as JSON
 * `{username, password}` on the call's stdin, never in argv. The relay
 * speaks to http(s) upstreams only.
 */
export function proxyCredentialsOf(upstream: string | undefined, stdin: string): ProxyCredentials {
  if (!upstream || !/^https?:\/\//.test(upstream)) {
    throw new CliError(
      "UNSUPPORTED",
      "Proxy credentials need an http:// or https:// --proxy-server (the relay does not speak socks).",
    );
  }
  let given: Partial<ProxyCredentials> | undefined;
  try {
    given = JSON.parse(stdin) as Partial<ProxyCredentials>;
  } catch {
    // Reported below, without echoing what was read.
  }
  if (typeof given?.username !== "string" || typeof given.password !== "string") {
    throw new CliError("INVALID_ARGUMENT", "--proxy-credentials stdin reads {username, password} as JSON on stdin.");
  }
  return { username: given.username, password: given.password };
}
