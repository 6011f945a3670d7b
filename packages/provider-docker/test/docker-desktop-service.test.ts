import { spawnSync } from "node:child_process";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import type { ExecRequest, Logger, Machine, OpContext } from "@agent-computer/core";
import { LinuxDesktopRuntime, type LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { impostorHeard, startImpostorGateway, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The resident desktop service (docs/architecture.md §4) on a real container
// of the real image: calls travel over one authenticated websocket through
// a TCP proxy this test controls (so it can cut the connection), the
// service is killed mid-batch, strangers and replayed handshakes are
// refused, a bot that takes the gateway's port gets nothing, and the key
// is nowhere a bot or a log could read it. The exec fallback runs last.
const env = await dockerTestEnvironment("docker desktop service");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
  const idOf = (m: Machine) => m.ref.slice("docker:".length);
  /**
   * In the container, input on stdin (so nothing secret lands in an argv): as root, or as the
   * computer's user, who owns the desktop's processes and files (root there holds no
   * capabilities, so it can neither signal them nor read their environments).
   */
  const shell = (m: Machine, script: string, input = "", user = "1000") =>
    spawnSync("docker", ["exec", "-i", "-u", user, idOf(m), "sh", "-c", script], { input, encoding: "utf8" });

  /** A TCP proxy between the host and the gateway's published port that the test can cut. */
  class CuttableProxy {
    private readonly sockets = new Set<Socket>();
    private server?: Server;
    port = 0;
    async start(target: { host: string; port: number }): Promise<void> {
      const server = createServer((client) => {
        const upstream = connect(target.port, target.host);
        for (const s of [client, upstream]) {
          this.sockets.add(s);
          s.on("close", () => this.sockets.delete(s));
          s.on("error", () => s.destroy());
        }
        // Either side closing closes the other, as a real proxy does.
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
        client.pipe(upstream).pipe(client);
      });
      this.server = server;
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      this.port = (server.address() as { port: number }).port;
    }
    cut(): number {
      const n = this.sockets.size;
      for (const s of this.sockets) s.destroy();
      return n;
    }
    close(): void {
      this.cut();
      this.server?.close();
    }
  }

  describe("docker desktop service", () => {
    // The shared display (displayContainer: false): this file tests what holds when the display stack
    // runs in the computer's own container; docker-display-container.test.ts covers the default.
    const provider = env.provider({ dataDir, displayContainer: false });
    const proxy = new CuttableProxy();
    const execs: ExecRequest[] = [];
    const handedOverKeys: string[] = [];
    const logged: string[] = [];
    const logger: Logger = {
      debug: (m, f) => logged.push(`${m} ${JSON.stringify(f ?? {})}`),
      info: (m, f) => logged.push(`${m} ${JSON.stringify(f ?? {})}`),
      warn: (m, f) => logged.push(`${m} ${JSON.stringify(f ?? {})}`),
      error: (m, f) => logged.push(`${m} ${JSON.stringify(f ?? {})}`),
    };
    const ctx: OpContext = { logger };
    let machine: Machine;
    let desktop: LinuxDesktopSession;
    let gatewayUrl: string;
    /** A batch of move, wait, move interrupted during the wait: done, uncertain, not run. */
    const expectSplitWhen = async (interrupt: () => void) => {
      const batch = desktop.act(
        [
          { type: "move", x: 10, y: 10 },
          { type: "wait", ms: 4000 },
          { type: "move", x: 20, y: 20 },
        ],
        ctx,
      );
      await sleep(1500);
      interrupt();
      const outcome = await batch;
      expect(outcome.ok).toBe(false);
      expect(outcome.results.map((r) => r.status)).toEqual(["done", "failed", "not-run"]);
      expect(outcome.results[1]).toMatchObject({ uncertain: true, error: { code: "UNAVAILABLE" } });
    };
    const gatewayPid = () =>
      // The bracket keeps the pattern from matching this shell's own command line.
      Number(shell(machine, "pgrep -f 'desktop[.]mjs gateway' | head -1").stdout.trim()) || undefined;

    beforeAll(async () => {
      machine = await provider.provision({ computerId: "service", homeKey: `service-${Date.now()}` });
      const direct = new URL(await (machine.portUrl as NonNullable<Machine["portUrl"]>)(6080, { private: true }));
      await proxy.start({ host: direct.hostname, port: Number(direct.port) });
      gatewayUrl = `ws://127.0.0.1:${proxy.port}/service`;
      // Every call the driver makes goes through these two: the exec count says which way calls travel,
      // and the stdin of `desktop service` is the key (recorded here only so the test can search for it).
      const realExec = machine.exec.bind(machine);
      machine.exec = (request, context) => {
        execs.push(request);
        if (request.argv?.includes("service") && request.stdin instanceof Uint8Array)
          handedOverKeys.push(text(request.stdin));
        return realExec(request, context);
      };
      machine.portUrl = async () => `http://127.0.0.1:${proxy.port}`;
      desktop = (await machine.openDesktop?.("service-bot", ctx)) as LinuxDesktopSession;
    }, 120_000);
    afterAll(async () => {
      proxy.close();
      await machine?.destroy();
    });

    it("answers observe, act, page and grants over the connection, with no exec per call", async () => {
      expect(handedOverKeys).toHaveLength(1);
      const before = execs.length;
      const look = await desktop.observe(ctx);
      expect(look.mimeType).toBe("image/png");
      expect(text((look.image as Uint8Array).subarray(1, 4))).toBe("PNG");
      expect((await desktop.act([{ type: "move", x: 40, y: 50 }], ctx)).ok).toBe(true);
      expect((await desktop.observe(ctx, { includeImage: false })).cursor).toEqual({ x: 40, y: 50 });
      expect(await desktop.evaluateInPage("1 + 1", ctx)).toBe(2);
      const endpoint = await desktop.screenEndpoint("view", ctx);
      await desktop.revokeEndpoint(endpoint.id, ctx);
      // A verb's own failure comes back as it is, and is never run a second time through exec.
      await expect(desktop.observe(ctx, { region: { x: 5000, y: 0, width: 10, height: 10 } })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      expect(execs.length).toBe(before);
    }, 60_000);

    it("encodes JPEG and WebP in the computer at the width asked for, and says which it sent", async () => {
      const png = await desktop.observe(ctx, { maxWidth: 640 });
      const jpeg = await desktop.observe(ctx, { format: "jpeg", quality: 60, maxWidth: 640 });
      const webp = await desktop.observe(ctx, { format: "webp", quality: 60, maxWidth: 640 });
      expect(jpeg.mimeType).toBe("image/jpeg");
      expect([...(jpeg.image as Uint8Array).subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
      expect(webp.mimeType).toBe("image/webp");
      expect(text((webp.image as Uint8Array).subarray(8, 12))).toBe("WEBP");
      for (const o of [png, jpeg, webp]) expect(o.imageSize).toEqual({ width: 640, height: 400 });
    }, 60_000);

    it("keeps no file of the programs it starts: its open files do not grow as desktops start and stop", async () => {
      // Counted from the host: the gateway is non-dumpable, so nothing in the computer may list its fds.
      const gatewayFds = () => {
        const top = spawnSync("docker", ["top", idOf(machine), "-eo", "pid,args"], { encoding: "utf8" }).stdout;
        const pid = top
          .split("\n")
          .find((line) => /desktop[.]mjs gateway/.test(line))
          ?.trim()
          .split(/\s+/)[0];
        return readdirSync(`/proc/${pid}/fd`).length;
      };
      const startAndStop = async () => {
        const other = (await machine.openDesktop?.("fd-bot", ctx)) as LinuxDesktopSession;
        await other.release(ctx);
      };
      // The first start opens what the service keeps for good; each later one must leave nothing behind.
      await startAndStop();
      const before = gatewayFds();
      for (let i = 0; i < 3; i++) await startAndStop();
      // Before the fix each start kept its X server's, window manager's and browser's log open: +9.
      expect(gatewayFds() - before).toBeLessThan(3);
    }, 180_000);

    it("runs consecutive pointer actions as one chain, each reported done, and refuses an off-screen one before sending it", async () => {
      const moves = Array.from({ length: 10 }, (_, i) => ({ type: "move" as const, x: 100 + i * 10, y: 120 + i }));
      const chained = await desktop.act(moves, ctx);
      expect(chained.results.map((r) => r.status)).toEqual(Array(10).fill("done"));
      expect((await desktop.observe(ctx, { includeImage: false })).cursor).toEqual({ x: 190, y: 129 });
      const refused = await desktop.act(
        [
          { type: "move", x: 15, y: 16 },
          { type: "move", x: 99_999, y: 5 },
          { type: "move", x: 17, y: 18 },
        ],
        ctx,
      );
      expect(refused.results.map((r) => r.status)).toEqual(["done", "failed", "not-run"]);
      expect(refused.results[1]).toMatchObject({ error: { code: "INVALID_ARGUMENT" } });
      expect(refused.results[1]?.uncertain).toBeFalsy();
      expect((await desktop.observe(ctx, { includeImage: false })).cursor).toEqual({ x: 15, y: 16 });
    }, 60_000);

    it("stops an aborted batch in the computer: what was not run never happens", async () => {
      await desktop.act([{ type: "move", x: 200, y: 210 }], ctx);
      const controller = new AbortController();
      const batch = desktop.act(
        [
          { type: "wait", ms: 2500 },
          { type: "move", x: 300, y: 310 },
        ],
        { ...ctx, signal: controller.signal },
      );
      await sleep(500);
      controller.abort();
      const before = execs.length;
      await expect(batch).rejects.toMatchObject({ code: "ABORTED" });
      await sleep(3000);
      expect((await desktop.observe(ctx, { includeImage: false })).cursor).toEqual({ x: 200, y: 210 });
      // The abort was the caller's, not the service's: calls stay on the connection.
      expect(execs.length).toBe(before);
    }, 60_000);

    it("gives the done / uncertain / not-run split when the connection is cut mid-batch, then recovers", async () => {
      const pid = gatewayPid();
      const keysBefore = handedOverKeys.length;
      await expectSplitWhen(() => expect(proxy.cut()).toBeGreaterThan(0));
      // A new connection through the same proxy; the service kept running and kept the key.
      expect((await desktop.observe(ctx, { includeImage: false })).display).toBe(desktop.display);
      expect(gatewayPid()).toBe(pid);
      expect(handedOverKeys.length).toBe(keysBefore);
    }, 60_000);

    it("gives the same split when the service is killed with kill -9 mid-batch, and the next call restarts it", async () => {
      const pid = gatewayPid();
      expect(pid).toBeGreaterThan(0);
      await expectSplitWhen(() => expect(shell(machine, `kill -9 ${pid}`).status).toBe(0));
      const keysBefore = handedOverKeys.length;
      expect((await desktop.act([{ type: "move", x: 70, y: 80 }], ctx)).ok).toBe(true);
      expect((await desktop.observe(ctx, { includeImage: false })).cursor).toEqual({ x: 70, y: 80 });
      const restarted = gatewayPid();
      expect(restarted).toBeGreaterThan(0);
      expect(restarted).not.toBe(pid);
      // The new service knew no key: the host handed it over again.
      expect(handedOverKeys.length).toBe(keysBefore + 1);
    }, 60_000);

    it("refuses a wrong key, a replayed handshake and a client that does not answer the challenge", async () => {
      // The handshake as the protocol documents it (desktop-runtime's src/service/service-protocol.ts), by hand.
      const serviceKeyId = (k: string) =>
        createHash("sha256").update(`agent-computer service key\n${k}`).digest("base64url").slice(0, 16);
      const serviceProof = (k: string, role: "host" | "service", theirs: string, ours: string) =>
        createHmac("sha256", k).update(`agent-computer service ${role}\n${theirs}\n${ours}`).digest("base64url");
      const newNonce = () => randomBytes(16).toString("base64url");
      const key = Buffer.alloc(32, 7).toString("base64url");
      const handed = await machine.exec({ argv: ["desktop", "service"], stdin: new TextEncoder().encode(key) });
      expect(text(handed.stdout)).toContain('"ok":true');
      /** Opens a connection, answers the challenge with `hello(challenge)`, and says how it ended. */
      const attempt = (hello: (challenge: string) => object | undefined) =>
        new Promise<{ welcome?: { proof: string }; closeCode?: number; challenge?: string }>((resolve) => {
          const ws = new WebSocket(gatewayUrl);
          let challenge: string | undefined;
          ws.on("message", (data) => {
            const message = JSON.parse(String(data));
            if (message.t === "challenge") {
              challenge = message.nonce;
              const reply = hello(message.nonce);
              if (reply) ws.send(JSON.stringify(reply));
            } else if (message.t === "welcome") {
              resolve({ welcome: message, ...(challenge ? { challenge } : {}) });
              ws.close();
            }
          });
          ws.on("close", (code) => resolve({ closeCode: code, ...(challenge ? { challenge } : {}) }));
          ws.on("error", () => {});
        });
      const nonce = newNonce();
      let recorded: object | undefined;
      const good = await attempt((challenge) => {
        recorded = { t: "hello", keyId: serviceKeyId(key), nonce, proof: serviceProof(key, "host", challenge, nonce) };
        return recorded;
      });
      expect(good.welcome?.proof).toBe(serviceProof(key, "service", nonce, good.challenge as string));
      // The same hello on a new connection answers an old challenge: refused.
      expect((await attempt(() => recorded)).closeCode).toBe(4401);
      const stranger = Buffer.alloc(32, 9).toString("base64url");
      const wrong = await attempt((challenge) => ({
        t: "hello",
        keyId: serviceKeyId(stranger),
        nonce,
        proof: serviceProof(stranger, "host", challenge, nonce),
      }));
      expect(wrong.closeCode).toBe(4401);
      const forged = await attempt(() => ({ t: "hello", keyId: serviceKeyId(key), nonce, proof: "A".repeat(43) }));
      expect(forged.closeCode).toBe(4401);
      // A call before any hello is refused too, and runs nothing.
      const early = await attempt(() => ({ t: "call", id: 1, argv: ["list"], timeoutMs: 1000 }));
      expect(early.closeCode).toBe(4401);
    }, 60_000);

    it("keeps the key out of every process's argv and environment, every file, the log, desktop list and events", async () => {
      expect(handedOverKeys.length).toBeGreaterThanOrEqual(2);
      // Patterns on stdin (-f -): the key never appears in grep's own argv or environment. Each search
      // first finds something it must find (the gateway's state variable, the gateway's log), so an
      // unreadable /proc or folder cannot pass it by accident.
      const search = (paths: string, patterns: string, user?: string) =>
        shell(machine, `grep -l -a -r -D skip -F -f - ${paths} 2>/dev/null; true`, `${patterns}\n`, user).stdout.trim();
      const procs = "/proc/[0-9]*/cmdline /proc/[0-9]*/environ";
      expect(search(procs, "AGENT_COMPUTER_DESKTOP_STATE=")).toMatch(/environ/);
      expect(search("/tmp", "service-key keyId=")).toMatch(/gateway\.log/);
      const keys = handedOverKeys.join("\n");
      expect(search(procs, keys)).toBe("");
      expect(search("/tmp /home /opt /var/log", keys)).toBe("");
      expect(search("/tmp /home /opt /var/log", keys, "0")).toBe("");
      const list = await machine.exec({ argv: ["desktop", "list"] });
      const gatewayLog = shell(machine, "cat /tmp/agent-computer-desktops/gateway/gateway.log").stdout;
      expect(gatewayLog).toContain("service-key");
      for (const key of handedOverKeys) {
        expect(text(list.stdout)).not.toContain(key);
        expect(gatewayLog).not.toContain(key);
        expect(logged.join("\n")).not.toContain(key);
      }
    }, 60_000);

    it("sends nothing but a hello to a bot that killed the gateway and took its port, and grants no capability", async () => {
      // As the bot (the computer's user): kill the gateway, take its port.
      await startImpostorGateway(machine);
      // The next call meets the impostor, which cannot prove the key: the call goes through exec instead.
      const typed = "typed-through-exec-not-to-the-impostor";
      const outcome = await desktop.act([{ type: "type", text: typed }], ctx);
      expect(outcome.ok).toBe(true);
      await expect(desktop.screenEndpoint("view", ctx)).rejects.toMatchObject({ code: "UNAVAILABLE" });
      const heard = await impostorHeard(machine);
      expect(heard).toContain('"t":"hello"');
      expect(heard).not.toContain('"t":"call"');
      expect(heard).not.toContain(typed);
      for (const key of handedOverKeys) expect(heard).not.toContain(key);
    }, 90_000);
  });

  describe("docker desktop service: the exec fallback", () => {
    const provider = env.provider({ dataDir, desktopTransport: "exec", displayContainer: false });
    let machine: Machine;

    beforeAll(async () => {
      machine = await provider.provision({ computerId: "service-exec", homeKey: `service-exec-${Date.now()}` });
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("runs every verb through exec, one process per call, with the same answers", async () => {
      let execs = 0;
      const realExec = machine.exec.bind(machine);
      machine.exec = (request, context) => {
        execs++;
        return realExec(request, context);
      };
      const desktop = (await machine.openDesktop?.("exec-bot")) as LinuxDesktopSession;
      const before = execs;
      const look = await desktop.observe(undefined, { format: "jpeg" });
      expect(look.mimeType).toBe("image/jpeg");
      expect((await desktop.act([{ type: "move", x: 11, y: 12 }])).ok).toBe(true);
      expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 11, y: 12 });
      const endpoint = await desktop.screenEndpoint("view");
      expect(endpoint.url).toMatch(/\/screens\//);
      expect(execs - before).toBe(4);
      await desktop.release();
    }, 90_000);

    it("falls back to exec on a machine without portUrl", async () => {
      const bare = { exec: machine.exec.bind(machine), workspacePath: machine.workspacePath };
      const runtime = new LinuxDesktopRuntime(bare);
      const desktop = await runtime.openDesktop("bare-bot");
      expect((await desktop.act([{ type: "move", x: 5, y: 6 }])).ok).toBe(true);
      expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 5, y: 6 });
      await expect(desktop.screenEndpoint("view")).rejects.toMatchObject({ code: "UNSUPPORTED" });
      await desktop.release();
    }, 90_000);
  });
}
