import { InMemorySnapshotMemory } from "../in-memory-snapshot-memory.js";
import { PageSession, type PageSessionOptions } from "../page-session.js";
import { EmulatorPageEngine } from "./emulator-page-engine.js";

/**
 * `BROWSER_PROVIDER=emulator`: real loopback HTTP pages in an in-process
 * DOM (happy-dom). Not the bot's logged-in browser: a stand-in so page-tool
 * flows run where there is no Chromium.
 */
export class EmulatorPageBrowser extends PageSession<object> {
  private readonly dom: EmulatorPageEngine;

  constructor(
    options: PageSessionOptions = {},
    respond?: (url: string) => { status: number; html: string } | undefined,
  ) {
    const dom = new EmulatorPageEngine(respond);
    super(dom, new InMemorySnapshotMemory(), options);
    this.dom = dom;
  }

  /** Ends the page's timers and scripts. */
  close(): Promise<void> {
    return this.dom.close();
  }
}
