import type { PageBrowser } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import { EmulatorPageBrowser } from "./emulator-page-browser.js";
import { FakePageBrowser } from "./fake-page-browser.js";

/**
 * The in-process browser `BROWSER_PROVIDER` names for tests: `emulator`
 * (the default: loopback HTTP pages in happy-dom) or `fake` (the scripted
 * `pages`, no network).
 */
export function pageBrowserFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
  pages: Readonly<Record<string, string>> = {},
): PageBrowser & { close(): Promise<void> } {
  const kind = env.BROWSER_PROVIDER ?? "emulator";
  if (kind === "emulator") return new EmulatorPageBrowser();
  if (kind === "fake") return new FakePageBrowser(pages);
  throw new AgentComputerError(
    "INVALID_ARGUMENT",
    `BROWSER_PROVIDER must be "fake" or "emulator", not "${kind.slice(0, 40)}".`,
  );
}
