import { request } from "node:http";
import type { Machine } from "@agent-computer/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PREVIEW_DOMAIN, PREVIEW_WARNING_COOKIE, SKIP_PREVIEW_WARNING_HEADER } from "../src/testing/index.js";
import { daytonaTestEnvironment, TEST_API_KEY } from "./daytona-test-environment.js";

// The preview proxy (apps/proxy) and the API's sandbox states (apps/api
// sandbox.service.ts) as daytonaio/daytona v0.190.0 has them, and the
// emulator's own check of every request against the published definition.
const env = await daytonaTestEnvironment("daytona: the preview proxy and the sandbox states");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine;
  const idOf = (m: Machine) => m.ref.slice("daytona:".length);
  const CHROME =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

  /** A call of the emulated REST API as a client of its own: the status and the JSON body. */
  const api = async (method: string, path: string) => {
    const answer = await fetch(`${env.emulator.apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_API_KEY}` },
    });
    return { status: answer.status, body: (await answer.json().catch(() => undefined)) as Record<string, unknown> };
  };

  describe("daytona: the preview proxy and the sandbox states", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "proxy-states", homeKey: `proxy-states-${Date.now()}` });
      await machine.files.write("site/index.html", new TextEncoder().encode("the site"));
      await machine.exec({
        shell: "cd site && setsid nohup python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 < /dev/null &",
      });
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    }, 60_000);

    it("signs preview URLs in host form, https://<port>-<token>.<proxy domain>", async () => {
      const url = await (machine.portUrl as NonNullable<Machine["portUrl"]>)(8080, { private: true });
      const host = env.emulator.previewHostOf(url);
      expect(host).toMatch(/^8080-[a-z0-9]{16}\.proxy\.daytona\.test$/);
      await expect.poll(async () => (await fetch(url).catch(() => undefined))?.status, { timeout: 15_000 }).toBe(200);
      expect(await (await fetch(url)).text()).toBe("the site");
    }, 30_000);

    it("shows a browser the warning page first, unless the skip header or the accepted cookie says otherwise", async () => {
      const url = await (machine.portUrl as NonNullable<Machine["portUrl"]>)(8080, { private: true });
      const page = await fetch(url, { headers: { "user-agent": CHROME } });
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
      const html = await page.text();
      expect(html).toContain('action="/accept-daytona-preview-warning?redirect=');
      expect(html).not.toContain("the site");
      const skipped = await fetch(url, { headers: { "user-agent": CHROME, [SKIP_PREVIEW_WARNING_HEADER]: "true" } });
      expect(await skipped.text()).toBe("the site");
      // Accepting sets the cookie and sends the browser back; with the cookie the site answers.
      const accept = await fetch(new URL("/accept-daytona-preview-warning?redirect=%2F", url), {
        method: "POST",
        headers: { "user-agent": CHROME },
        redirect: "manual",
      });
      expect(accept.status).toBe(302);
      expect(accept.headers.get("location")).toBe("/");
      expect(accept.headers.get("set-cookie")).toContain(`${PREVIEW_WARNING_COOKIE}=true`);
      const withCookie = await fetch(url, {
        headers: { "user-agent": CHROME, cookie: `${PREVIEW_WARNING_COOKIE}=true` },
      });
      expect(await withCookie.text()).toBe("the site");
    }, 30_000);

    it("lets a browser's websocket upgrade through to the port without the warning page", async () => {
      const url = new URL(await (machine.portUrl as NonNullable<Machine["portUrl"]>)(8080, { private: true }));
      // python's http.server refuses the upgrade itself: what answers is the sandbox's port, not the warning.
      const answer = await new Promise<{ status: number; server: string }>((resolve, reject) => {
        const req = request({
          host: url.hostname,
          port: url.port,
          path: "/",
          headers: {
            "user-agent": CHROME,
            connection: "Upgrade",
            upgrade: "websocket",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          },
        });
        req.once("response", (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, server: String(res.headers.server ?? "") });
        });
        req.once("upgrade", (res, socket) => {
          socket.destroy();
          resolve({ status: res.statusCode ?? 0, server: String(res.headers.server ?? "") });
        });
        req.once("error", reject);
        req.end();
      });
      expect(answer.server).toMatch(/SimpleHTTP/);
    }, 30_000);

    it("redirects a request with a token that is not valid for the port to the proxy's login (307)", async () => {
      const forged = await env.emulator.previewTunnel(`https://8080-${"a".repeat(16)}.${PREVIEW_DOMAIN}/`);
      const answer = await fetch(forged, { redirect: "manual" });
      expect(answer.status).toBe(307);
      expect(answer.headers.get("location")).toMatch(
        /^https:\/\/auth\.proxy\.daytona\.test\/authorize\?.*redirect_uri=https%3A%2F%2Fproxy\.daytona\.test%2Fcallback/,
      );
    });

    it("answers 400 to a stop of a stopped sandbox and 409 to a start during a state change, with the API's error body", async () => {
      await env.emulator.stopBehindTheProvider(idOf(machine));
      const stop = await api("POST", `/sandbox/${idOf(machine)}/stop`);
      expect(stop.status).toBe(400);
      expect(stop.body).toMatchObject({
        statusCode: 400,
        error: "Bad Request",
        message: "Sandbox is not in a stoppable state",
        path: `/api/sandbox/${idOf(machine)}/stop`,
      });
      expect(typeof stop.body.timestamp).toBe("string");
      env.emulator.startDelayMs = 1_500;
      try {
        expect((await api("POST", `/sandbox/${idOf(machine)}/start`)).status).toBe(200);
        const again = await api("POST", `/sandbox/${idOf(machine)}/start`);
        expect(again.status).toBe(409);
        expect(again.body).toMatchObject({
          statusCode: 409,
          error: "Conflict",
          message: "Sandbox state change in progress",
        });
      } finally {
        env.emulator.startDelayMs = 0;
      }
      await expect.poll(() => env.emulator.stateOf(idOf(machine)), { timeout: 30_000 }).toBe("started");
    }, 60_000);

    it("passes through pausing, paused and resuming (the provider resumes it), and waits out snapshotting and forking", async () => {
      const id = idOf(machine);
      const from = env.emulator.statesOf(id).length;
      await env.emulator.pauseBehindTheProvider(id);
      expect(env.emulator.stateOf(id)).toBe("paused");
      expect((await machine.exec({ argv: ["echo", "resumed"] })).stdout).toEqual(new TextEncoder().encode("resumed\n"));
      for (const state of ["snapshotting", "forking"] as const) {
        const held = env.emulator.holdBehindTheProvider(id, state, 1_500);
        await expect.poll(() => env.emulator.stateOf(id)).toBe(state);
        expect((await machine.exec({ argv: ["echo", state] })).exitCode).toBe(0);
        await held;
      }
      expect(env.emulator.statesOf(id).slice(from)).toEqual([
        "pausing",
        "paused",
        "resuming",
        "started",
        "snapshotting",
        "started",
        "forking",
        "started",
      ]);
    }, 90_000);

    it("records a request that leaves the definition as a violation", async () => {
      const before = env.emulator.violations.length;
      const answer = await fetch(`${env.emulator.apiUrl}/sandbox`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_API_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ snapshot: 42, notAField: true }),
      });
      expect(answer.status).toBeGreaterThanOrEqual(400);
      const added = env.emulator.violations.slice(before);
      expect(added).toEqual([expect.objectContaining({ operation: "createSandbox", where: "request" })]);
      // Only this deliberate one: the file's end asserts none (closeEmulatorAfterAll).
      env.emulator.recorder.violations.splice(before);
    });
  });
}
