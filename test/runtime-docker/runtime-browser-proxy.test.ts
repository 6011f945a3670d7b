import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { ComputerToolSession, callTool, computerTools, createComputerRuntime } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";

// Issue 46: a bot's browser goes through the upstream proxy the app names
// for it (`browserProxy`), whoever starts its desktop: its run, the agent
// tools in a later run after the desktop was torn down, a person's screen
// (`desktopFor`). The upstream (provider-docker's test/upstream-proxy.py,
// 407 without the right Basic credentials, a JSON line per request)
// listens on the computer's loopback; the site on the container's bridge
// address, so Chromium sends it through the relay. The shared display
// (displayContainer: false), as provider-docker's relay test runs it.
const UPSTREAM_PORT = 3128;
const SITE_PORT = 8791;
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "the runtime's per-bot browser proxy on Docker",
);

if (!env.missing) {
  describe("the runtime's per-bot browser proxy on Docker", () => {
    it("sends the bot's browser through its proxy in every desktop it gets: run, tools after a teardown, a person's screen", async () => {
      const dataDir = await temporaryDataDir();
      const secret = `proxy-secret-${randomBytes(6).toString("hex")}`;
      const upstream = `http://127.0.0.1:${UPSTREAM_PORT}`;
      const asked: string[] = [];
      const runtime = createComputerRuntime({
        provider: dockerProvider({ docker: env.docker, image: env.image, dataDir, displayContainer: false }),
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
        idleMs: 0,
        browserProxy: ({ botId }) => {
          asked.push(botId);
          return botId === "alice" ? { server: upstream, username: "alice", password: secret } : undefined;
        },
      });
      const workspaceId = `proxy-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alice" });
      let machine: Machine | undefined;
      // As the computer's user, beside the runs: a run's fenced machine refuses calls once the run ended.
      const sh = async (shell: string) => {
        const id = String((await runtime.leases.getComputer(computerId))?.providerRef).slice("docker:".length);
        return spawnSync("docker", ["exec", "-u", "1000", id, "sh", "-c", shell], { encoding: "utf8" }).stdout;
      };
      const upstreamHits = async () =>
        (await sh("cat /tmp/upstream.log 2>/dev/null || true"))
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { target: string; user: string | null; ok: boolean })
          .filter((hit) => hit.target.endsWith(`:${SITE_PORT}/index.html`) && hit.user === "alice" && hit.ok).length;
      const relayOf = async (bot: string) =>
        (
          JSON.parse(await sh("desktop list")) as { desktops: { bot: string; proxyRelayPort?: number }[] }
        ).desktops.find((d) => d.bot === bot)?.proxyRelayPort;

      try {
        const first = runtime.startRun({ workspaceId, botId: "alice" });
        machine = await first.machine();
        await machine.files.write(
          "relay/upstream-proxy.py",
          readFileSync(new URL("../../packages/provider-docker/test/upstream-proxy.py", import.meta.url)),
        );
        await machine.files.write(
          "relay/site/index.html",
          new TextEncoder().encode("<title>Via proxy</title><p>ok</p>"),
        );
        const ip = (await sh("hostname -i")).trim().split(/\s+/)[0] ?? "";
        expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        const site = `http://${ip}:${SITE_PORT}/index.html`;
        const started = await machine.exec({
          shell: `cd relay && (cd site && setsid nohup python3 -m http.server ${SITE_PORT} --bind ${ip} >/dev/null 2>&1 </dev/null &)
setsid nohup python3 upstream-proxy.py ${UPSTREAM_PORT} /tmp/upstream.log >/tmp/upstream.err 2>&1 </dev/null &
for i in $(seq 1 50); do [ "$(curl -s -o /dev/null -w '%{http_code}' -x ${upstream} ${site})" = 407 ] && exit 0; sleep 0.1; done; exit 1`,
          env: { UPSTREAM_AUTH: Buffer.from(`alice:${secret}`).toString("base64") },
        });
        expect(started.exitCode).toBe(0);

        // 1. The run's own desktop.
        const desktop = await first.desktop();
        expect(await relayOf("alice")).toEqual(expect.any(Number));
        expect((await desktop.pageBrowser?.navigate(site))?.title).toBe("Via proxy");
        expect(await upstreamHits()).toBe(1);
        // The password is in no browser's argv.
        expect(await sh("ps -eo args")).not.toContain(secret);

        // 2. Torn down, then a new run's agent tools start the desktop again: still through the proxy.
        await desktop.release();
        await first.end("completed");
        expect(await relayOf("alice")).toBeUndefined();
        const second = runtime.startRun({ workspaceId, botId: "alice" });
        const session = new ComputerToolSession({ run: second, capabilities: runtime.capabilities, vision: false });
        const navigate = computerTools(session).find((t) => t.name === "browser_navigate");
        if (!navigate) throw new Error("no browser_navigate tool");
        const result = await callTool(navigate, { url: site }, session);
        expect(result.isError, JSON.stringify(result)).toBeFalsy();
        expect(await upstreamHits()).toBe(2);
        expect(await relayOf("alice")).toEqual(expect.any(Number));
        await (await second.desktop()).release();
        await second.end("completed");

        // 3. A person's screen (desktopFor) starts it with the same proxy.
        const watched = await runtime.desktopFor({ computerId, botId: "alice" });
        expect(await relayOf("alice")).toEqual(expect.any(Number));
        expect((await watched.pageBrowser?.navigate(site))?.title).toBe("Via proxy");
        expect(await upstreamHits()).toBe(3);
        // A bot the app names no proxy for goes direct.
        const bob = await runtime.desktopFor({ computerId, botId: "bob" });
        expect(await relayOf("bob")).toBeUndefined();
        await bob.release();
        expect(asked).toEqual(["alice", "alice", "alice", "bob"]);
      } finally {
        const ref = (await runtime.leases.getComputer(computerId))?.providerRef;
        if (ref) await env.docker.getContainer(ref.slice("docker:".length)).remove({ force: true });
      }
    }, 240_000);
  });
}
