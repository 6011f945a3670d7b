import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// A bot's browser through an upstream proxy that demands credentials: the
// upstream (test/upstream-proxy.py, python3 in the computer, 407 without
// the right Basic credentials, one JSON log line per request) listens on
// the computer's loopback, where only the relay reaches it; the site
// listens on the container's bridge address, so Chromium sends it through
// its relay. Everything stays inside the computer's network namespace.
const UPSTREAM_PORT = 3128;
const SITE_PORT = 8781;
const LOOPBACK_SITE_PORT = 8782;
const REFUSED_PORT = 3999;
const env = await dockerTestEnvironment("docker proxy relay");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  // The shared display (displayContainer: false): this file tests what holds when the display stack
  // runs in the computer's own container; docker-display-container.test.ts covers the default.
  const provider = env.provider({ dataDir, displayContainer: false });
  const secret = `relay-secret-${randomBytes(6).toString("hex")}`;
  const upstream = `http://127.0.0.1:${UPSTREAM_PORT}`;
  let machine: Machine;
  let site: string;

  const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
  const sh = async (shell: string) => {
    const result = await machine.exec({ shell });
    return { code: result.exitCode, out: text(result.stdout), err: text(result.stderr) };
  };
  const upstreamLog = async () =>
    (await sh("cat /tmp/upstream.log 2>/dev/null || true")).out
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { method: string; target: string; user: string | null; ok: boolean });
  const relayPorts = async () => {
    const listed = JSON.parse((await sh("desktop list")).out) as {
      desktops: { bot: string; proxyRelayPort?: number }[];
    };
    return new Map(listed.desktops.map((d) => [d.bot, d.proxyRelayPort]));
  };
  const open = (bot: string, proxy: { server: string; username?: string; password?: string }) =>
    machine.openDesktop?.(bot, undefined, { proxy }) as Promise<LinuxDesktopSession>;

  describe("docker proxy relay", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "proxy-relay", homeKey: `proxy-relay-${Date.now()}` });
      const encoder = new TextEncoder();
      await machine.files.write(
        "relay/upstream-proxy.py",
        readFileSync(new URL("./upstream-proxy.py", import.meta.url)),
      );
      await machine.files.write(
        "relay/site/index.html",
        encoder.encode("<title>Relay site</title><p>Hello through the relay</p>"),
      );
      await machine.files.write(
        "relay/local/index.html",
        encoder.encode("<title>Local site</title><p>Straight from loopback</p>"),
      );
      const ip = (await sh("hostname -i")).out.trim().split(/\s+/)[0] ?? "";
      if (!/^\d+\.\d+\.\d+\.\d+$/.test(ip) || ip.startsWith("127.")) throw new Error(`no bridge address: "${ip}"`);
      site = `http://${ip}:${SITE_PORT}`;
      const started = await machine.exec({
        shell: `cd relay && (cd site && setsid nohup python3 -m http.server ${SITE_PORT} --bind ${ip} >/dev/null 2>&1 </dev/null &)
(cd local && setsid nohup python3 -m http.server ${LOOPBACK_SITE_PORT} --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &)
setsid nohup python3 upstream-proxy.py ${UPSTREAM_PORT} /tmp/upstream.log >/tmp/upstream.err 2>&1 </dev/null &
for i in $(seq 1 50); do
  curl -fs ${site}/index.html >/dev/null && curl -fs http://127.0.0.1:${LOOPBACK_SITE_PORT}/ >/dev/null \
    && [ "$(curl -s -o /dev/null -w '%{http_code}' -x ${upstream} ${site}/index.html)" = 407 ] && exit 0
  sleep 0.1
done; exit 1`,
        // The upstream's expected credentials: in its environment, not its argv.
        env: { UPSTREAM_AUTH: Buffer.from(`alice:${secret}`).toString("base64") },
      });
      if (started.exitCode !== 0) throw new Error("the upstream proxy or the sites did not come up");
      await sh("rm -f /tmp/upstream.log");
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("browses through the bot's relay with its credentials; loopback and DevTools stay direct", async () => {
      const [alice, bob] = await Promise.all([
        open("relay-alice", { server: upstream, username: "alice", password: secret }),
        // Credentials in the URL work too; these are wrong.
        open("relay-bob", { server: `http://bob:not-${secret}@127.0.0.1:${UPSTREAM_PORT}` }),
      ]);

      // Each bot its own relay, on a port derived from its profile path.
      const ports = await relayPorts();
      const alicePort = ports.get("relay-alice") as number;
      const bobPort = ports.get("relay-bob") as number;
      expect(alicePort).not.toBe(bobPort);
      const derived = (bot: string) =>
        20_000 +
        (createHash("sha256").update(`/home/computer/.browser-profiles/${bot}`).digest().readUInt32BE(0) % 10_000);
      for (const [bot, port] of [
        ["relay-alice", alicePort],
        ["relay-bob", bobPort],
      ] as const) {
        expect(port - derived(bot)).toBeGreaterThanOrEqual(0);
        expect(port - derived(bot)).toBeLessThan(64);
      }
      const browsers = (await sh("ps -eo args | grep -- '--proxy-server=' | grep -v -- '--type=' | grep -v grep")).out;
      expect(browsers).toContain(`--proxy-server=http://127.0.0.1:${alicePort}`);
      expect(browsers).not.toContain("loopback");

      // The page loads through the relay; the upstream saw alice's credentials.
      const page = await alice.pageBrowser.navigate(`${site}/index.html`);
      expect(page.text).toContain("Hello through the relay");
      expect(await upstreamLog()).toContainEqual({
        method: "GET",
        target: `${site}/index.html`,
        user: "alice",
        ok: true,
      });
      // CONNECT (how Chromium reaches https and websockets) through the same relay.
      const tunnel = await sh(`curl -s -p -x http://127.0.0.1:${alicePort} ${site}/index.html`);
      expect(tunnel.out).toContain("Hello through the relay");
      expect(await upstreamLog()).toContainEqual({
        method: "CONNECT",
        target: site.slice("http://".length),
        user: "alice",
        ok: true,
      });

      // Loopback pages and DevTools never cross the upstream.
      const seen = (await upstreamLog()).length;
      const local = await alice.pageBrowser.navigate(`http://127.0.0.1:${LOOPBACK_SITE_PORT}/index.html`);
      expect(local.text).toContain("Straight from loopback");
      expect(await alice.evaluateInPage("document.title")).toBe("Local site");
      await alice.pageBrowser.snapshot();
      const after = await upstreamLog();
      // (Chromium's own background calls to Google may cross it: only ours count here.)
      const ours = (entry: { target: string }) =>
        entry.target.includes(site.slice("http://".length).split(":")[0] as string);
      expect(after.slice(seen).filter(ours)).toEqual([]);
      expect(after.some((entry) => /127\.0\.0\.1|localhost/.test(entry.target))).toBe(false);

      // Wrong credentials fail the load clearly, never a prompt or a hang.
      const refused = await bob.pageBrowser.navigate(`${site}/index.html`);
      expect(refused.text).toContain("refused this bot's proxy credentials (HTTP 407)");
      const started = Date.now();
      await expect(bob.pageBrowser.navigate(`https://${site.slice("http://".length)}/`)).rejects.toMatchObject({
        code: "UNAVAILABLE",
        message: expect.stringContaining("ERR_TUNNEL_CONNECTION_FAILED"),
      });
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await upstreamLog()).toContainEqual(expect.objectContaining({ user: "bob", ok: false }));

      // The secret is nowhere: process listings, desktop state and logs, the desktop command's JSON.
      // (The needle is read from a file, so this very check shows it in no process listing.)
      await machine.files.write("relay/needle", new TextEncoder().encode(secret));
      const leaks = await sh(
        `{ ps -eo args; cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; cat -v /tmp/agent-computer-desktops/*.json /tmp/agent-computer-desktops/slot-*/*.log; desktop list; } | grep -F -f relay/needle || true`,
      );
      expect(leaks.out).toBe("");

      await Promise.all([alice.release(), bob.release()]);
    }, 240_000);

    it("keeps the relay through a quiesce, and stops it with the bot's desktop", async () => {
      const carol = await open("relay-carol", { server: upstream, username: "alice", password: secret });
      const port = (await relayPorts()).get("relay-carol") as number;
      const relayOf = async () =>
        (await sh("ps -eo pid,args | grep 'proxy-relay --bot relay-carol' | grep -v grep || true")).out.trim();
      expect(await relayOf()).not.toBe("");

      // An export closes the browser; resume starts it again on the same relay.
      const resume = await machine.quiesceDesktops?.();
      await resume?.();
      const again = await carol.pageBrowser.navigate(`${site}/index.html?after-resume`);
      expect(again.text).toContain("Hello through the relay");
      expect(await upstreamLog()).toContainEqual({
        method: "GET",
        target: `${site}/index.html?after-resume`,
        user: "alice",
        ok: true,
      });

      // A start without a proxy on a quiesced bot (a person's screen opening it) keeps the relay: never direct.
      const resumeLater = await machine.quiesceDesktops?.();
      const reopened = await machine.openDesktop?.("relay-carol");
      expect((await relayPorts()).get("relay-carol")).toBe(port);
      const chromiumArgs = (await sh("ps -eo args | grep 'browser-profiles/relay-carol' | grep -v grep || true")).out;
      expect(chromiumArgs).toContain(`--proxy-server=http://127.0.0.1:${port}`);
      await resumeLater?.();
      expect(reopened?.botId).toBe("relay-carol");

      await carol.release();
      expect(await relayOf()).toBe("");
      const closed = await sh(`curl -s -o /dev/null -x http://127.0.0.1:${port} ${site}/index.html; echo $?`);
      expect(closed.out.trim()).toBe("7"); // curl: could not connect
    }, 180_000);

    it("fails page loads clearly when the upstream refuses connections", async () => {
      const dave = await open("relay-dave", {
        server: `http://127.0.0.1:${REFUSED_PORT}`,
        username: "alice",
        password: secret,
      });
      const started = Date.now();
      const page = await dave.pageBrowser.navigate(`${site}/index.html`);
      expect(page.text).toContain("The upstream proxy could not be reached (ECONNREFUSED)");
      await expect(dave.pageBrowser.navigate(`https://${site.slice("http://".length)}/`)).rejects.toMatchObject({
        code: "UNAVAILABLE",
      });
      expect(Date.now() - started).toBeLessThan(20_000);
      await dave.release();
    }, 120_000);

    it("keeps a proxy without credentials direct, and refuses credentials for socks", async () => {
      const erin = await open("relay-erin", { server: upstream });
      expect((await relayPorts()).get("relay-erin")).toBeUndefined();
      const browsers = (await sh("ps -eo args | grep -- '--proxy-server=' | grep relay-erin | grep -v grep")).out;
      expect(browsers).toContain(`--proxy-server=${upstream}`);
      // Straight to the upstream, which wants credentials Chromium cannot give.
      const page = await erin.pageBrowser.navigate(`${site}/index.html`).catch((e: Error) => e);
      expect(page instanceof Error ? page.message : page.text).not.toContain("Hello through the relay");
      expect(await upstreamLog()).toContainEqual({
        method: "GET",
        target: `${site}/index.html`,
        user: null,
        ok: false,
      });
      await erin.release();

      const error = await machine
        .openDesktop?.("relay-socks", undefined, {
          proxy: { server: "socks5://127.0.0.1:1080", username: "u", password: secret },
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "UNSUPPORTED" });
      expect(JSON.stringify(error)).not.toContain(secret);
      expect(String((error as Error).message)).not.toContain(secret);
    }, 120_000);
  });
}
