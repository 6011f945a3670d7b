import type { Machine } from "@agent-computer/core";

// A hostile bot's setting planted where the display's programs read it (a
// proxy in its browser profile, a secure-DNS template in the profile's
// Local State), naming a listener the bot runs: each connection the
// listener gets is a line in PLANTED_LOG, and it answers an empty HTTP 200
// so a browser that was steered to it ends its request.

/** One line per connection the planted listener got. */
const PLANTED_LOG = "/tmp/planted-listener.log";

/** A shell command's outcome, as the suite's own "run as the bot" gives it. */
interface BotShellResult {
  readonly status: number | null;
  readonly stdout: string;
}

/**
 * As the bot: writes `settings(port)` to `file` of the profile folder of
 * `bot` (a bot with no desktop yet), starts the listener on
 * `listenOn:port`, then opens that bot's desktop and one page. Resolves
 * to how many connections the listener got ("0" where the planted
 * setting is ignored); the listener is stopped after.
 */
export async function connectionsAfterPlanting(input: {
  readonly machine: Pick<Machine, "openDesktop" | "workspacePath">;
  /** Runs a shell script as the bot, in the container that holds its processes. */
  readonly asBot: (script: string) => BotShellResult;
  readonly bot: string;
  /** The file, relative to the bot's profile folder (`Default/Preferences`, `Local State`). */
  readonly file: string;
  readonly settings: (port: number) => string;
  /** The listener's address, as the display reaches the bot's computer. */
  readonly listenOn: string;
}): Promise<string> {
  const { machine, asBot, bot, file, settings, listenOn } = input;
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const path = `${machine.workspacePath}/.browser-profiles/${bot}/${file}`;
  const planted = asBot(
    `mkdir -p "$(dirname "${path}")" && echo '${settings(port)}' > "${path}" || exit 1
    ${startListener(listenOn, port)}`,
  );
  if (planted.status !== 0) throw new Error(`the bot could not plant ${file} and start its listener`);
  try {
    const browser = (await machine.openDesktop?.(bot))?.pageBrowser;
    // Without a page the browser asked for nothing, and "0" would prove nothing.
    if (!browser) throw new Error(`${bot}'s desktop has no page browser to open a page with`);
    await browser.navigate(`http://${bot}-probe.example/`).catch(() => undefined);
    return asBot(`cat ${PLANTED_LOG} 2>/dev/null | wc -l`).stdout.trim();
  } finally {
    asBot("pkill -f planted-listene[r]");
  }
}

/** Shell: starts the listener on `host:port` in the background, then exits 0 once it listens (1 after 5 s). */
function startListener(host: string, port: number): string {
  const script = [
    "import socket",
    "s = socket.socket()",
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)",
    `s.bind(("${host}", ${port}))`,
    "s.listen(16)",
    "while True:",
    "  c, _ = s.accept()",
    `  open("${PLANTED_LOG}", "a").write("connection\\n")`,
    '  c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n")',
    "  c.close()",
  ].join("\n");
  return `rm -f ${PLANTED_LOG}; setsid nohup python3 -c '${script}' >/dev/null 2>&1 </dev/null &
    for i in $(seq 1 50); do grep -qi ":$(printf %04X ${port}) 00000000:0000 0A" /proc/net/tcp && exit 0; sleep 0.1; done; exit 1`;
}
