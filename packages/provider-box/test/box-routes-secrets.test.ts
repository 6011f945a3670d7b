import { readdir, readFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Logger, type Machine, opContext } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it, vi } from "vitest";
import { boxProvider } from "../src/index.js";
import { ACCOUNT_ENV, boxTestEnvironment, TEST_API_KEY } from "./box-test-environment.js";

// The private routes refuse whoever lacks the token (HTTP and websocket
// upgrades alike); boxes get no account environment; the API key and the
// route tokens appear in no log line, event, error, console line, box
// environment, exported home or saved checkpoint; the service's transient
// answers are retried and a refused key is never "gone".
const env = await boxTestEnvironment("box: private routes, secrets and faults");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const portUrl = (m: Machine, port: number, ctx?: ReturnType<typeof opContext>) =>
    (m.portUrl as NonNullable<Machine["portUrl"]>)(port, { private: true }, ctx);
  const withoutToken = (url: string) => {
    const u = new URL(url);
    u.searchParams.delete("_token");
    return u.toString();
  };
  /** The status a websocket upgrade to `url` is answered with (101 when taken). */
  const upgradeStatus = (url: string) =>
    new Promise<number>((resolve, reject) => {
      const req = request(url, {
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": Buffer.from("0123456789abcdef").toString("base64"),
        },
      });
      req.once("upgrade", (res, socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.once("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.once("error", reject);
      req.end();
    });
  let machine: Machine;

  describe("box: private routes, secrets and faults", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("a private route without its token, or with another port's, is refused; with it, HTTP and upgrades reach the port", async () => {
      machine = await provider.provision({ computerId: "routes", homeKey: `routes-${Date.now()}` });
      owned.push(machine);
      await machine.files.write("site/index.html", new TextEncoder().encode("route ok"));
      await machine.exec({
        shell: "cd site && nohup python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 &",
      });
      const url = await portUrl(machine, 8080);
      expect(new URL(url).searchParams.get("_token")).toMatch(/^[0-9a-f]{40}$/);
      await expect.poll(async () => (await fetch(url).catch(() => undefined))?.status, { timeout: 15_000 }).toBe(200);
      expect(await (await fetch(url)).text()).toBe("route ok");

      const refusedBefore = env.emulator.refusedRoutes.length;
      expect((await fetch(withoutToken(url))).status).toBe(401);
      const wrong = new URL(url);
      wrong.searchParams.set("_token", "0".repeat(40));
      expect((await fetch(wrong)).status).toBe(401);
      // A token admits its own port only.
      const gateway = await portUrl(machine, 6080);
      const crossed = new URL(gateway);
      crossed.searchParams.set("_token", new URL(url).searchParams.get("_token") as string);
      expect((await fetch(crossed)).status).toBe(401);
      // Websocket upgrades: refused without the token; with it they reach the box's screen gateway.
      const desktop = await (machine.openDesktop as NonNullable<Machine["openDesktop"]>)("routes-bot");
      await desktop.observe();
      expect(await upgradeStatus(withoutToken(gateway))).toBe(401);
      expect(await upgradeStatus(gateway)).not.toBe(401);
      await desktop.release();
      expect(env.emulator.refusedRoutes.length).toBe(refusedBefore + 4);
    }, 120_000);

    it("creates and resumes every box with noEnv: the account's environment never enters a computer", async () => {
      const environment = await machine.exec({ argv: ["env"] });
      expect(new TextDecoder().decode(environment.stdout)).not.toContain(ACCOUNT_ENV.ACCOUNT_SECRET);
      expect(env.emulator.noEnvSeen.length).toBeGreaterThan(0);
      expect(env.emulator.noEnvSeen.every(Boolean)).toBe(true);
    }, 60_000);

    it("never says the API key or a route token", async () => {
      const said: string[] = [];
      const logger: Logger = {
        debug: (m, f) => said.push(JSON.stringify([m, f])),
        info: (m, f) => said.push(JSON.stringify([m, f])),
        warn: (m, f) => said.push(JSON.stringify([m, f])),
        error: (m, f) => said.push(JSON.stringify([m, f])),
      };
      const ctx = () => opContext({ timeoutMs: 60_000, logger });
      const noteError = (error: unknown) => {
        said.push(
          String(error),
          JSON.stringify(error),
          String((error as Error)?.stack),
          String((error as Error)?.cause),
        );
      };
      const tokens: string[] = [];
      const consoleSpies = (["log", "warn", "error", "info", "debug"] as const).map((name) =>
        vi.spyOn(console, name).mockImplementation((...args: unknown[]) => void said.push(args.map(String).join(" "))),
      );
      try {
        const dataDir = await temporaryDataDir();
        const runtime = createComputerRuntime({
          provider,
          stateStore: new MemoryStateStore(),
          homeStore: new LocalAgentHomeStore({ dataDir }),
          logger,
          onEvent: (e) => said.push(JSON.stringify(e)),
        });
        const run = runtime.startRun({ workspaceId: `secrets-${Date.now()}`, botId: "alpha" });
        const box = await run.machine();
        owned.push(box);
        await box.files.write("notes.txt", new TextEncoder().encode("hello"), ctx());
        for (const port of [6080, 8080])
          tokens.push(new URL(await portUrl(box, port, ctx())).searchParams.get("_token") as string);
        const desktop = await (box.openDesktop as NonNullable<Machine["openDesktop"]>)("alpha", ctx());
        await desktop.observe(ctx());
        await desktop.release(ctx());

        // A service that echoes the secrets back in its error text (a 400 the definition lists for op:command).
        env.emulator.inject({
          path: /\/commands$/,
          status: 400,
          code: "invalid_request",
          message: `bad request for Authorization: Bearer ${TEST_API_KEY} (route ?_token=${tokens[0]})`,
        });
        const echoed = await failureOf(box.exec({ argv: ["true"] }, ctx()));
        expect(AgentComputerError.is(echoed, "INVALID_ARGUMENT")).toBe(true);
        noteError(echoed);

        // A refused key: an error, never "gone", naming no key.
        const refused = boxProvider({ apiKey: `${TEST_API_KEY}-revoked`, baseUrl: env.emulator.baseUrl });
        const refusal = await failureOf(refused.reconnect(box.ref, ctx()));
        expect(AgentComputerError.is(refusal, "UNAVAILABLE")).toBe(true);
        expect((refusal as AgentComputerError).retryable).toBe(false);
        noteError(refusal);
        noteError(await failureOf(refused.provision({ computerId: "refused", homeKey: "refused" }, ctx())));

        // The box's environment and an exported home.
        const environment = await box.exec({ argv: ["env"] }, ctx());
        said.push(Buffer.from(environment.stdout).toString("latin1"));
        const chunks: Buffer[] = [];
        for await (const chunk of await box.files.exportWorkspace(ctx())) chunks.push(chunk as Buffer);
        said.push(Buffer.concat(chunks).toString("latin1"));

        // The provider's own log lines, and the checkpoint the run saves at its end.
        const direct = await provider.provision({ computerId: "direct", homeKey: `direct-${Date.now()}` }, ctx());
        await direct.stop(ctx());
        await direct.destroy(ctx());
        await run.end("completed");
        for (const name of await readdir(dataDir, { recursive: true })) {
          const bytes = await readFile(join(dataDir, String(name))).catch(() => undefined);
          if (bytes) said.push(bytes.toString("latin1"));
        }
      } finally {
        for (const spy of consoleSpies) spy.mockRestore();
      }
      const everything = said.join("\n");
      // The search is real: the run said things, and the errors carry their context.
      expect(said.length).toBeGreaterThan(10);
      expect(everything).toContain("sandbox provisioned");
      expect(everything).toContain("[redacted]");
      expect(everything).not.toContain(TEST_API_KEY);
      for (const token of tokens) {
        expect(token).toMatch(/^[0-9a-f]{40}$/);
        expect(everything).not.toContain(token);
      }
    }, 150_000);

    it("finds its computers across pages of an account with many sandboxes, and no one else's", async () => {
      // 250 sandboxes of someone else (a teammate's, or made by hand): more than one page of 200.
      const foreign = env.emulator.addSandboxes(250);
      const ours = await provider.list({ labels: { "agent-computer.org/computer-id": "routes" } });
      expect(ours).toEqual([machine.ref]);
      const lists = env.emulator.requests.filter((r) => r === "GET /sandboxes").length;
      await provider.list({ labels: {} });
      expect(env.emulator.requests.filter((r) => r === "GET /sandboxes").length).toBeGreaterThanOrEqual(lists + 2);
      expect((await provider.list({ labels: {} })).some((ref) => foreign.includes(ref.slice(4)))).toBe(false);
      expect(await provider.reconnect(`box:${foreign[0]}`)).toBe("gone");
      // A name the service keeps whole: within 120 characters, and ours by its digests only.
      const name = env.emulator.nameOf(machine.ref.slice(4)) as string;
      expect(name.length).toBeLessThanOrEqual(120);
      expect(name).toMatch(/^ac1 s\d+( [A-Za-z0-9_-]{8})+$/);
    }, 60_000);

    it("deletes only with the confirmation the service asks for, and follows the deletion to its end", async () => {
      const doomed = await provider.provision({ computerId: "doomed", homeKey: `doomed-${Date.now()}` });
      const id = doomed.ref.slice(4);
      // Without the header the service refuses and keeps the sandbox (as a client we did not write would find).
      const bare = await fetch(`${env.emulator.baseUrl}/sandboxes/${id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${TEST_API_KEY}` },
      });
      expect(bare.status).toBe(409);
      expect(((await bare.json()) as { code: string }).code).toBe("delete_confirmation_required");
      expect(env.emulator.stateOf(id)).toBe("ready");
      await doomed.destroy();
      expect(env.emulator.stateOf(id)).toBe("deleted");
      expect(env.emulator.containerOf(id)).toBeUndefined();
      expect(env.emulator.requests.some((r) => r.startsWith("GET /deletion-operations/bdop_"))).toBe(true);
      expect(await provider.reconnect(doomed.ref)).toBe("gone");
      // The hand-made DELETE without the header left the definition: the recorder saw it, and only it.
      const refused = env.emulator.recorder.violations.splice(0);
      expect(refused).toMatchObject([{ operation: "deleteSandbox", where: "request" }]);
    }, 120_000);

    it("retries 429 and 5xx within the deadline, then says UNAVAILABLE; a deleted box is gone", async () => {
      const id = machine.ref.slice("box:".length);
      env.emulator.inject({ method: "POST", path: /\/commands$/, status: 429, times: 2 });
      env.emulator.inject({ method: "GET", path: new RegExp(`^/sandboxes/${id}$`), status: 503, times: 3 });
      expect(new TextDecoder().decode((await machine.exec({ shell: "printf ok" })).stdout)).toBe("ok");
      expect(await provider.reconnect(machine.ref)).not.toBe("gone");
      expect(env.emulator.pendingFaults).toBe(0);

      const impatient = env.provider({ retryMs: 1_000 });
      env.emulator.inject({ method: "GET", path: new RegExp(`^/sandboxes/${id}$`), status: 502, times: 1_000 });
      const started = Date.now();
      const failure = await failureOf(impatient.reconnect(machine.ref));
      env.emulator.clearFaults();
      expect(AgentComputerError.is(failure, "UNAVAILABLE")).toBe(true);
      expect((failure as AgentComputerError).retryable).toBe(true);
      expect(Date.now() - started).toBeLessThan(5_000);

      // A create whose answer was lost: the retry carries the same idempotency key and gets the same box.
      const creates = () => env.emulator.requests.filter((r) => r === "POST /sandboxes").length;
      const [createsBefore, madeBefore] = [creates(), env.emulator.froms.length];
      env.emulator.inject({ method: "POST", path: /^\/sandboxes$/, status: 502, after: true });
      const once = await provider.provision({ computerId: "once", homeKey: `once-${Date.now()}` });
      owned.push(once);
      expect(creates()).toBe(createsBefore + 2);
      expect(env.emulator.froms.length).toBe(madeBefore + 1);
      expect(await provider.list({ labels: { "agent-computer.org/computer-id": "once" } })).toEqual([once.ref]);

      await env.emulator.deleteBehindTheProvider(id);
      expect(await provider.reconnect(machine.ref)).toBe("gone");
      expect(await provider.reconnect("box:bx_22222222")).toBe("gone");
    }, 90_000);
  });
}
