import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { definePageBrowserConformance, PAGE_FIXTURES } from "@agent-computer/testing/conformance";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The page browser on the bot's real Chromium in the computer image: the
// same cases the emulator passes in core, fixture pages served inside the
// computer, every call through the machine's exec.
const PORT = 8766;
const env = await dockerTestEnvironment("docker page browser");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  let machine: Machine;
  let desktop: LinuxDesktopSession;

  describe("docker page browser", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "page-browser", homeKey: `page-browser-${Date.now()}` });
      for (const [name, html] of Object.entries(PAGE_FIXTURES)) {
        await machine.files.write(`page-fixtures/${name}`, new TextEncoder().encode(html));
      }
      const started = await machine.exec({
        shell: `cd page-fixtures && setsid nohup python3 -m http.server ${PORT} --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &
for i in $(seq 1 50); do curl -fs http://127.0.0.1:${PORT}/login.html >/dev/null && exit 0; sleep 0.1; done; exit 1`,
      });
      if (started.exitCode !== 0) throw new Error("the page fixtures did not come up");
      desktop = (await machine.openDesktop?.("pager")) as LinuxDesktopSession;
    }, 180_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    definePageBrowserConformance({
      layout: true,
      browser: async () => desktop.pageBrowser,
      urlOf: (name) => `http://127.0.0.1:${PORT}/${name}`,
      timeoutMs: 90_000,
    });
  });
}
