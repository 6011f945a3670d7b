// The in-computer `desktop` command (docs/architecture.md §4): one process per
// call, one JSON document on stdout (act: one JSON line per action, then a
// summary), so the host side parses one format whatever the provider. The
// verbs themselves live in desktop-verbs.ts, shared with the resident
// service; this file adds the long-lived processes and the process I/O.
import { readFileSync } from "node:fs";
import { isBotId } from "@agent-computer/core";
import { TERMINAL_HOST_PORT } from "../../src/desktop/display-apart-policy.js";
import { CliError } from "./cli-error.js";
import { parseCliOptions } from "./cli-options.js";
import { handOverServiceKey } from "./desktop-service.js";
import { DesktopState, desktopStateDir as stateDir } from "./desktop-state.js";
import { runDesktopVerb, USAGE } from "./desktop-verbs.js";
import { runDevtoolsBridge } from "./devtools-pipe-bridge.js";
import { prepareXAccess } from "./display-isolation.js";
import { runGateway } from "./gateway-main.js";
import { runLoopbackProxy } from "./loopback-proxy.js";
import { RELAY_FIRST_PORT, RELAY_PORT_COUNT, runProxyRelay } from "./proxy-relay.js";
import { runTerminalHost } from "./terminal-host.js";
import { errorLine } from "./verb-errors.js";

const writeLine = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function main(argv: string[]): Promise<void> {
  const [verb, ...rest] = argv;
  // Every X client a verb or the gateway starts takes the display's cookie, where X asks for one.
  prepareXAccess(new DesktopState(stateDir()).dir);
  switch (verb) {
    case "gateway":
      // Long-lived: started detached by `screen grant` or `service` when none runs; it hosts the service.
      await runGateway(new DesktopState(stateDir()));
      return;
    case "service":
      // The host's key for the resident service, on stdin; starts the gateway that hosts it.
      writeLine({ ok: true, ...(await handOverServiceKey(new DesktopState(stateDir()), readFileSync(0, "utf8"))) });
      return;
    case "loopback-proxy":
      // Long-lived: the computer's own command when its display has a container of its own (provider-docker),
      // with the terminal host beside it: one process serves both ends the display reaches the computer by.
      await Promise.all([runLoopbackProxy(), runTerminalHost(new DesktopState(stateDir()))]);
      return;
    case "terminal-host":
      // Long-lived: the bot's container's own command beside a display container that shares its loopback
      // (a Kubernetes pod), which reaches it there: on loopback only, never the pod's address.
      await runTerminalHost(new DesktopState(stateDir()), TERMINAL_HOST_PORT, "127.0.0.1");
      return;
    case "devtools-bridge": {
      // Long-lived: started detached by `start` as the browser's parent (devtools-pipe-bridge.ts).
      const [socketPath, separator, program, ...args] = rest;
      if (!socketPath?.startsWith("/") || separator !== "--" || !program) {
        throw new CliError("INVALID_ARGUMENT", "usage: desktop devtools-bridge SOCKET -- PROGRAM [ARGS...]");
      }
      process.exitCode = await runDevtoolsBridge(socketPath, program, args);
      return;
    }
    case "proxy-relay": {
      // Long-lived: started detached by `start` (proxy-relay-process.ts), credentials on stdin.
      const opts = parseCliOptions(rest, USAGE);
      const bot = opts.get("bot");
      const port = Number(opts.get("port") ?? RELAY_FIRST_PORT);
      if (
        !isBotId(bot) ||
        !Number.isInteger(port) ||
        port < RELAY_FIRST_PORT ||
        port >= RELAY_FIRST_PORT + RELAY_PORT_COUNT
      ) {
        throw new CliError("INVALID_ARGUMENT", "usage: desktop proxy-relay --bot ID --port N");
      }
      await runProxyRelay(bot, port);
      return;
    }
    default: {
      let stdin: string | undefined;
      await runDesktopVerb(argv, {
        // Read only by the verbs that take input: a verb without any never waits on an open stdin.
        stdin: () => {
          stdin ??= readFileSync(0, "utf8");
          return stdin;
        },
        write: writeLine,
      });
    }
  }
}

main(process.argv.slice(2)).then(
  () => {
    process.exitCode ??= 0;
  },
  (error: unknown) => {
    if (!(error instanceof CliError)) {
      process.stderr.write(`desktop: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }
    writeLine(errorLine(error));
    process.exitCode = error instanceof CliError ? 1 : 2;
  },
);
