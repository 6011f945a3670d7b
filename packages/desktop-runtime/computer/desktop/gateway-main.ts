// `desktop gateway` (docs/architecture.md §4): the screen gateway's process.
// It serves the gateway's port and control socket, and picks where
// terminals run: beside the gateway, or on the computer's terminal host when
// the display runs apart from the bot's processes (TERMINAL_HOST_ENV).
import { chmodSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { join } from "node:path";
import { TERMINAL_HOST_ENV } from "../../src/desktop/display-apart-policy.js";
import { CliError } from "./cli-error.js";
import { admitConnections, upgraded } from "./connection-admission.js";
import { DesktopService } from "./desktop-service.js";
import type { DesktopState } from "./desktop-state.js";
import { serveControl } from "./gateway-control.js";
import { GatewayFiles, gatewayPort } from "./gateway-files.js";
import { GatewayLog } from "./gateway-log.js";
import { identify } from "./process-status.js";
import { RemoteTerminals, terminalHostOf } from "./remote-terminals.js";
import { ScreenGateway } from "./screen-gateway.js";
import { readJson } from "./screen-teardown.js";
import { type TerminalBackend, TerminalServers } from "./terminal-servers.js";
import { VncServers } from "./vnc-servers.js";

function listen(server: HttpServer, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/**
 * `desktop gateway`: runs the gateway until SIGTERM. The port is its lock:
 * a second gateway cannot bind it and exits before touching any file.
 */
export async function runGateway(state: DesktopState): Promise<void> {
  if (process.getuid?.() === 0) {
    throw new CliError("UNSUPPORTED", "The screen gateway runs as the computer's user (uid 1000), never as root.");
  }
  const files = new GatewayFiles(state);
  files.prepare();
  const log = new GatewayLog(files.logFile);
  const vnc = new VncServers(state, files, log);
  const terminals = terminalBackend(files, log);
  const gateway = new ScreenGateway(state, files, log, vnc, terminals, new DesktopService(log));
  const http = createHttpServer((req, res) => gateway.request(req, res));
  http.headersTimeout = 10_000;
  http.requestTimeout = 15_000;
  admitConnections(http, log);
  http.on("upgrade", (req, socket, head) => {
    upgraded(socket);
    gateway.upgrade(req, socket, head);
  });
  http.on("clientError", (_error, socket) => socket.destroy());
  const port = gatewayPort();
  try {
    await listen(http, port);
  } catch (error) {
    log.write("start-failed", { error: (error as NodeJS.ErrnoException).code ?? (error as Error).message });
    throw new CliError("UNAVAILABLE", `The screen gateway cannot listen on port ${port}: ${(error as Error).message}`);
  }
  writeFileSync(files.identityFile, JSON.stringify(identify(process.pid)), { mode: 0o600 });
  // Sockets of an earlier gateway are dead: its capabilities died with it.
  for (const name of readdirSync(files.capsDir)) rmSync(join(files.capsDir, name), { force: true });
  // So are its PTY servers (their stdin was its pipe): their session folders go.
  terminals.prepare();
  rmSync(files.controlSocket, { force: true });
  const control = await serveControl(files.controlSocket, (request) => gateway.handle(request));
  chmodSync(files.controlSocket, 0o600);
  const sweeper = setInterval(() => void gateway.sweep(), 1000);
  log.write("start", { pid: process.pid, port });
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  clearInterval(sweeper);
  gateway.shutdown();
  control.close();
  http.close();
  const me = identify(process.pid);
  const recorded = readJson<{ pid: number; startTime: string }>(files.identityFile);
  if (recorded && me && recorded.pid === me.pid && recorded.startTime === me.startTime) {
    rmSync(files.identityFile, { force: true });
  }
  log.write("stop", { pid: process.pid });
  // Open sockets would keep the loop alive; everything worth closing is closed.
  setTimeout(() => process.exit(0), 600).unref();
}

/** The computer's terminal host when the display container names one, else PTY servers beside the gateway. */
function terminalBackend(files: GatewayFiles, log: GatewayLog): TerminalBackend {
  const host = terminalHostOf(process.env[TERMINAL_HOST_ENV]);
  return host ? new RemoteTerminals(host, log) : new TerminalServers(files.terminalsDir, log);
}
