import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import {
  expectRfbScreen,
  pointerAfterTakeoverThroughExec,
  refusalOf,
  TerminalTestClient,
} from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boxTestEnvironment } from "./box-test-environment.js";

// Issue 42: screens and the browser terminal reach a Boat computer's screen
// gateway (port 6080) through the port hosting API (boat-v1.yaml
// op:hostPort, `{port, public: false}` → a URL carrying `_token`), on
// Boat's base and on the legacy Box base. Two locks guard the way in: the
// route's token (the service's proxy) and the gateway's own capability
// token; either alone is refused.
for (const base of ["boat", "box"] as const) {
  const suite = `${base}: screens and terminal through the hosted private route`;
  const env = await boxTestEnvironment(suite, {}, base);
  if (env.missing) continue;
  const provider = env.provider();
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const withoutRouteToken = (url: string) => {
    const u = new URL(url);
    u.searchParams.delete("_token");
    return u.toString();
  };

  describe(suite, () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: `screens-${base}`, homeKey: `screens-${base}-${Date.now()}` });
      desktop = (await machine.openDesktop?.("viewer", undefined, {
        screen: { width: 1024, height: 640 },
      })) as LinuxDesktopSession;
    }, 120_000);
    afterAll(async () => {
      await desktop?.release().catch(() => {});
      await machine?.destroy();
    });

    it("serves a view capability as RFB over the route, at the desktop's size; each lock alone is refused", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      expect(new URL(endpoint.url).searchParams.get("_token")).toMatch(/^[0-9a-f]{40}$/);
      const refusedBefore = env.emulator.refusedRoutes.length;
      await expectRfbScreen(endpoint, { width: 1024, height: 640 });
      // The route's token without the gateway's: the gateway refuses.
      const routed = new URL(endpoint.url);
      expect((await refusalOf(routed.href, { path: `${routed.pathname}${routed.search}` })).status).toBe(401);
      // The gateway's token without the route's: the service's proxy refuses before the box.
      const target = new URL(withoutRouteToken(endpoint.url));
      expect((await refusalOf(target.href, { token: endpoint.token, path: target.pathname })).status).toBe(401);
      expect(env.emulator.refusedRoutes.length).toBe(refusedBefore + 1);
    }, 60_000);

    it("gives a control capability's terminal a shell as the computer's user through the route", async () => {
      const control = await desktop.screenEndpoint("control");
      const terminal = await desktop.terminalEndpoint(undefined, { controlId: control.id });
      expect(new URL(terminal.url).searchParams.get("_token")).toMatch(/^[0-9a-f]{40}$/);
      const client = await TerminalTestClient.open(terminal);
      try {
        const [, user] = await client.run("echo who=$(id -un)", /who=(\w+)/);
        const bot = await machine.exec({ argv: ["id", "-un"] });
        expect(user).toBe(Buffer.from(bot.stdout).toString().trim());
      } finally {
        client.close();
      }
    }, 60_000);

    // Holds this package's README ("The display and the bot's user", issue 45) to the emulator:
    // the display runs under the bot's user, so a pointer loop the bot left running, started
    // through the machine's exec as the bot's commands are, takes the pointer back from a person
    // in control (pointerAfterTakeover). Last here: the loop runs until the machine ends.
    it("loses a person's pointer during a takeover to a loop the bot left running (the display shares the bot's user)", async () => {
      expect(await pointerAfterTakeoverThroughExec(machine, desktop)).toEqual({ x: 5, y: 5 });
    }, 60_000);
  });
}
