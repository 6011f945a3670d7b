import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Machine } from "@agent-computer/core";

/** The one page the bots browse: a text field, a counting button and what it counted. */
export const SOAK_PAGE = `<!doctype html><title>Soak</title><body><h1>Soak page</h1>
<label>Name <input id="name" name="name"></label>
<button id="count" onclick="document.getElementById('out').textContent = 'Clicked ' + (++window.clicks) + ' times'">Count</button>
<p id="out">Not clicked yet</p><script>window.clicks = 0;</script>`;

/** Where the bots' browsers find the soak page. */
export interface PageSite {
  /** The page's URL as the computer's browser reaches it. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves the page from this process on 127.0.0.1: for a computer that
 * shares this host's loopback (the fake provider's page browser runs in
 * this process).
 */
export async function serveFromHost(): Promise<PageSite> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(SOAK_PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/soak.html`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const COMPUTER_PORT = 8799;

/**
 * Writes the page into the home (`shared/soak-site/`) and serves it on the
 * computer's own loopback with python3, as the Docker provider's tests do
 * (packages/provider-docker/test/fixture-site.ts): the computer's browser
 * reaches it without any route to this host. The server dies with the computer.
 */
export async function serveInComputer(machine: Machine): Promise<PageSite> {
  await machine.files.write("shared/soak-site/soak.html", new TextEncoder().encode(SOAK_PAGE));
  const url = `http://127.0.0.1:${COMPUTER_PORT}/soak.html`;
  const started = await machine.exec({
    shell: `cd shared/soak-site && setsid nohup python3 -m http.server ${COMPUTER_PORT} --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
for i in $(seq 1 50); do curl -fs ${url} >/dev/null && exit 0; sleep 0.1; done; exit 1`,
  });
  if (started.exitCode !== 0) throw new Error("the soak page's server did not come up in the computer");
  return { url, close: async () => {} };
}
