import type { Machine, ScreenEndpoint } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { RfbTestClient, refusalOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The in-computer screen gateway on a real container of the real image:
// one published port, a token per capability, view without input, and
// every refusal a plain HTTP status before the upgrade.
const env = await dockerTestEnvironment("docker screen gateway");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  // The shared display (displayContainer: false): this file tests what holds when the display stack
  // runs in the computer's own container; docker-display-container.test.ts covers the default.
  const provider = env.provider({ dataDir, displayContainer: false });
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const clients: RfbTestClient[] = [];
  const open = async (endpoint: ScreenEndpoint) => {
    const client = await RfbTestClient.open(endpoint);
    clients.push(client);
    return client;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const pointerOf = async (display: string) => {
    const out = await machine.exec({ argv: ["xdotool", "getmouselocation"], env: { DISPLAY: display } });
    const match = /x:(\d+) y:(\d+)/.exec(Buffer.from(out.stdout).toString());
    return match ? { x: Number(match[1]), y: Number(match[2]) } : undefined;
  };

  describe("docker screen gateway", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "screens", homeKey: `screens-${Date.now()}` });
      desktop = (await machine.openDesktop?.("viewer-bot", undefined, {
        screen: { width: 1024, height: 640 },
      })) as LinuxDesktopSession;
    }, 120_000);
    afterAll(async () => {
      for (const client of clients) client.close();
      await desktop?.release().catch(() => {});
      await machine?.destroy();
    });

    it("serves a view capability as RFB: banner, no-auth handshake, ServerInit at the desktop's size", async () => {
      const before = Date.now();
      const endpoint = await desktop.screenEndpoint("view");
      expect(endpoint).toMatchObject({ mode: "view", id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/) });
      expect(new URL(endpoint.url).pathname).toBe(`/screens/${endpoint.id}`);
      expect(endpoint.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/screens\//);
      expect(endpoint.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(endpoint.expiresAt).toBeGreaterThan(before + 9 * 60_000);
      const client = await open(endpoint);
      expect(client.ws.protocol).toBe("binary");
      const init = await client.handshake();
      expect(init.banner).toBe("RFB 003.008\n");
      expect({ width: init.width, height: init.height }).toEqual({ width: 1024, height: 640 });
      expect(await client.requestUpdate()).toBe(0);
      client.close();
    }, 60_000);

    it("refuses a missing or wrong token with 401, never echoing it, while a good connection keeps working", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const good = await open(endpoint);
      await good.handshake();
      expect(await refusalOf(endpoint.url)).toMatchObject({ status: 401 });
      const wrong = `${endpoint.token.slice(0, -4)}AAAA`;
      const refused = await refusalOf(endpoint.url, { token: wrong });
      expect(refused.status).toBe(401);
      expect(refused.body).not.toContain(wrong);
      expect((await refusalOf(endpoint.url, { token: "short" })).status).toBe(401);
      await expect(RfbTestClient.open({ url: endpoint.url, token: wrong })).rejects.toThrow(/401/);
      expect(await good.requestUpdate()).toBe(0);
      good.close();
    }, 60_000);

    it("refuses paths with .., other prefixes and unknown ids with 404", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const { token, id } = endpoint;
      expect((await refusalOf(endpoint.url, { token, path: `/screens/../screens/${id}` })).status).toBe(404);
      expect((await refusalOf(endpoint.url, { token, path: `/screens/${id}/..` })).status).toBe(404);
      expect((await refusalOf(endpoint.url, { token, path: `/terminals/${id}` })).status).toBe(404);
      expect((await refusalOf(endpoint.url, { token, path: `/screens/%2e%2e%2f${id.slice(6)}` })).status).toBe(404);
      expect((await refusalOf(endpoint.url, { token, path: "/screens/AAAAAAAAAAAAAAAAAAAAAA" })).status).toBe(404);
      // The right path still works: query strings are ignored.
      expect((await refusalOf(endpoint.url, { token, path: `/screens/${id}?x=1` })).status).toBe(101);
    }, 60_000);

    it("refuses an expired capability with 410", async () => {
      const endpoint = await desktop.screenEndpoint("view", undefined, { ttlMs: 1000 });
      expect(endpoint.expiresAt - Date.now()).toBeLessThanOrEqual(1000);
      await sleep(Math.max(0, endpoint.expiresAt - Date.now()) + 300);
      expect((await refusalOf(endpoint.url, { token: endpoint.token })).status).toBe(410);
    }, 60_000);

    it("closes a revoked capability's open socket within 1 s and refuses it from then on", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const client = await open(endpoint);
      await client.handshake();
      // The revoke command starts the CLI in the computer (~0.5 s, more on a loaded machine): the gateway's
      // own promptness is measured from when that command has answered.
      await desktop.revokeEndpoint(endpoint.id);
      const answeredAt = Date.now();
      const closed = await client.closed;
      expect(closed.at - answeredAt).toBeLessThan(1000);
      expect((await refusalOf(endpoint.url, { token: endpoint.token })).status).toBe(410);
      await desktop.revokeEndpoint(endpoint.id); // idempotent
      // An id may start with "--" (base64url): it still reaches the gateway as an id, not as a flag.
      await expect(desktop.revokeEndpoint("--AAAAAAAAAAAAAAAAAAAA")).resolves.toBeUndefined();
      await expect(desktop.revokeEndpoint("not an id")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }, 60_000);

    it("moves the X pointer through a control capability and never through a view one", async () => {
      const control = await open(await desktop.screenEndpoint("control"));
      const view = await open(await desktop.screenEndpoint("view"));
      await Promise.all([control.handshake(), view.handshake()]);
      control.pointer(101, 202);
      const until = Date.now() + 5000;
      while (Date.now() < until && (await pointerOf(desktop.display))?.x !== 101) await sleep(100);
      expect(await pointerOf(desktop.display)).toEqual({ x: 101, y: 202 });
      view.pointer(303, 404);
      view.pointer(303, 404, 1);
      view.pointer(303, 404, 0);
      await sleep(1000);
      expect(await pointerOf(desktop.display)).toEqual({ x: 101, y: 202 });
      // The view connection is still up: dropping input is not an error.
      expect(await view.requestUpdate()).toBe(0);
      control.close();
      view.close();
    }, 60_000);

    it("closes only the connection that sends an oversized frame", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const [bad, good] = [await open(endpoint), await open(endpoint)];
      await Promise.all([bad.handshake(), good.handshake()]);
      bad.send(Buffer.alloc(300 * 1024));
      expect((await bad.closed).code).toBe(1009);
      expect(await good.requestUpdate()).toBe(0);
      good.close();
    }, 60_000);

    it("refuses a released bot's capability once its display serves another bot, and closed its socket", async () => {
      const a = (await machine.openDesktop?.("recycle-a")) as LinuxDesktopSession;
      const endpoint = await a.screenEndpoint("view");
      const client = await open(endpoint);
      await client.handshake();
      await a.release();
      // Teardown closed the socket before the slot was freed.
      const closed = await Promise.race([client.closed, sleep(1000).then(() => undefined)]);
      expect(closed).toBeDefined();
      const b = (await machine.openDesktop?.("recycle-b")) as LinuxDesktopSession;
      try {
        expect(b.display).toBe(a.display);
        expect((await refusalOf(endpoint.url, { token: endpoint.token })).status).toBe(410);
        await expect(a.screenEndpoint("view")).rejects.toMatchObject({ code: "CONFLICT" });
        // B's own capability works on the same display.
        const mine = await open(await b.screenEndpoint("view"));
        await mine.handshake();
        mine.close();
      } finally {
        await b.release();
      }
    }, 120_000);
  });
}
