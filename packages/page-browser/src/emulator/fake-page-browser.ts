import type { PageSessionOptions } from "../page-session.js";
import { EmulatorPageBrowser } from "./emulator-page-browser.js";

/**
 * `BROWSER_PROVIDER=fake`: scripted pages by URL, no network. Any other
 * URL answers 404. The same DOM and rules as the emulator.
 */
export class FakePageBrowser extends EmulatorPageBrowser {
  constructor(pages: Readonly<Record<string, string>>, options: PageSessionOptions = {}) {
    super(options, (url) => {
      const html = pages[url] ?? pages[url.replace(/\/$/, "")];
      return html === undefined ? undefined : { status: 200, html };
    });
  }
}
