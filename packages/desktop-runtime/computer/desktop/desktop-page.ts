import { CdpConnection, cdpJson } from "./cdp-connection.js";
import { CliError } from "./cli-error.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { sleep } from "./process-status.js";

/**
 * The first tab of a bot's browser through DevTools on loopback: navigate
 * and evaluate. A seed of the page-browser helper (docs/architecture.md §5), used by the
 * host to read what a page shows.
 */
export async function onFirstPage<T>(record: DisplaySlotRecord, work: (cdp: CdpConnection) => Promise<T>): Promise<T> {
  const targets = await cdpJson<{ type: string; webSocketDebuggerUrl?: string }[]>(record, "/json/list").catch(() => {
    throw new CliError("UNAVAILABLE", `The browser of ${record.bot} does not answer; is its desktop quiesced?`);
  });
  const page = targets.find((t) => t.type === "page" && t.webSocketDebuggerUrl);
  if (!page?.webSocketDebuggerUrl) throw new CliError("NOT_FOUND", `The browser of ${record.bot} has no open tab.`);
  const cdp = await CdpConnection.open(page.webSocketDebuggerUrl, record);
  try {
    return await work(cdp);
  } finally {
    cdp.close();
  }
}

export async function evaluate(cdp: CdpConnection, expression: string): Promise<unknown> {
  const result = (await cdp.call("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true })) as {
    result?: { value?: unknown };
    exceptionDetails?: { text?: string; exception?: { description?: string } };
  };
  if (result.exceptionDetails) {
    const why = result.exceptionDetails.exception?.description ?? result.exceptionDetails.text ?? "an exception";
    throw new CliError("INVALID_ARGUMENT", `The page threw: ${why.slice(0, 300)}`);
  }
  return result.result?.value;
}

/** Navigates and waits for the load to finish (or 15 s). */
export async function navigate(cdp: CdpConnection, url: string): Promise<void> {
  const result = (await cdp.call("Page.navigate", { url })) as { errorText?: string };
  if (result.errorText) throw new CliError("UNAVAILABLE", `Navigation failed: ${result.errorText}`);
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const state = await evaluate(cdp, "document.readyState").catch(() => undefined);
    if (state === "complete") return;
    await sleep(100);
  }
}
