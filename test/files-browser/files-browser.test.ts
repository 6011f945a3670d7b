import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { COMPUTER_LABELS } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, type DockerHostCheck, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFiles } from "@agent-computer/screens";
import { chooseTestProvider, reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { type Browser, chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { CHROMIUM, CHROMIUM_ARGS } from "../screens-browser/screens-app.js";
import { removeComputer } from "../support/remove-computer.js";

// A person's Files window in real headless Chromium, served by the files
// service in an app's HTTP server, on a real Docker computer: browsing a
// stopped computer from its stored home without starting it, a bot's new
// file showing within the refresh interval, byte-identical downloads, and
// uploads that need control, stay under the cap and never land half.
const REFRESH_MS = 2000;
const UPLOAD_MAX = 10 * 1024 * 1024;

const env = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
const missing =
  env.missing ?? (existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`);

/**
 * Ids of the running containers of one computer (its own and its display's,
 * by the computer-id label): other files' containers come and go beside
 * this one (docs/testing.md, "Side by side").
 */
async function running(docker: DockerHostCheck["docker"], computerId: string): Promise<string[]> {
  const label = `${COMPUTER_LABELS.computerId}=${computerId}`;
  return (await docker.listContainers({ filters: { label: [label] } })).map((c) => c.Id).sort();
}

if (missing) reportMissingProvider("files in a real browser", { kind: "docker", missing });
else {
  describe("files in a real browser", () => {
    let browser: Browser | undefined;
    afterAll(async () => {
      await browser?.close();
    });

    it("browses a stopped computer without starting it, follows the bot, downloads, and uploads only with control", async () => {
      const dataDir = await temporaryDataDir();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const runtime = createComputerRuntime({
        provider: dockerProvider({ docker: env.docker, image: env.image, dataDir }),
        stateStore: new MemoryStateStore(),
        homeStore,
        idleMs: 0,
      });
      const files = createFiles({ runtime, homeStore, secret: randomBytes(32), refreshMs: REFRESH_MS });
      const server = createServer((req, res) => {
        if (!files.handleRequest(req, res)) res.writeHead(404).end();
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const workspaceId = `files-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alice" });
      const data = randomBytes(256 * 1024);
      try {
        // The bot leaves a report and some data, then its computer is stopped.
        const run = runtime.startRun({ workspaceId, botId: "alice" });
        const machine = await run.machine();
        await machine.files.write("bots/alice/report.md", new TextEncoder().encode("# Report\nAll green.\n"));
        await machine.files.write("bots/alice/data.bin", data);
        // And plants links out: in a mounted home, on the host, they would lead to the host's /etc.
        await machine.exec({ shell: "ln -s /etc/passwd passwd && ln -s /etc etc", cwd: "bots/alice" });
        await run.end("completed");
        await runtime.stopComputer(computerId);
        const containerId = (await runtime.leases.getComputer(computerId))?.providerRef?.slice("docker:".length);
        expect(containerId).toBeTruthy();
        const container = env.docker.getContainer(containerId as string);
        expect((await container.inspect()).State.Running).toBe(false);
        const before = await running(env.docker, computerId);

        browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
        const context = await browser.newContext({ acceptDownloads: true });
        const page = await context.newPage();
        const view = await files.issueFilesCapability({ computerId, botId: "alice", mode: "view", ttlMs: 600_000 });
        await page.goto(`${origin}${view.pageUrl}`);
        await page.locator('li[data-path="bots/alice/report.md"] button').click();
        await expect.poll(() => page.locator("#preview-text").textContent()).toBe("# Report\nAll green.\n");
        expect(await page.locator("#source").textContent()).toMatch(/stopped/);
        expect(await page.locator("#upload-label").isHidden()).toBe(true);
        expect(await page.locator('li[data-path="bots/alice/passwd"]').getAttribute("data-kind")).toBe("symlink");
        const throughLinks = await page.evaluate(async (token) => {
          const statuses = [];
          for (const [op, path] of [
            ["preview", "bots/alice/passwd"],
            ["list", "bots/alice/etc"],
            ["preview", "bots/alice/etc/hostname"],
            ["preview", "bots/alice/../../../etc/passwd"],
          ] as const)
            statuses.push(
              (
                await fetch(`/files/api/${op}?path=${encodeURIComponent(path)}`, {
                  headers: { Authorization: `Bearer ${token}` },
                })
              ).status,
            );
          return statuses;
        }, view.token);
        expect(throughLinks).toEqual([400, 400, 400, 400]);
        // Listing and preview came from the stored home: no container started.
        expect((await container.inspect()).State.Running).toBe(false);
        expect(await running(env.docker, computerId)).toEqual(before);
        expect(await runtime.runningMachine(computerId)).toBeUndefined();

        // Running again: a file the bot writes shows within the refresh interval.
        const again = runtime.startRun({ workspaceId, botId: "alice" });
        const live = await again.machine();
        await live.exec({ shell: "echo fresh > fresh.txt", cwd: "bots/alice" });
        await page.locator('li[data-path="bots/alice/fresh.txt"]').waitFor({ timeout: REFRESH_MS + 3000 });
        expect(await page.locator("#source").textContent()).toMatch(/live/);
        await again.end("completed");

        // A download is byte-identical.
        await page.locator('li[data-path="bots/alice/data.bin"] button').click();
        const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#download").click()]);
        expect(download.suggestedFilename()).toBe("data.bin");
        expect((await readFile(await download.path())).equals(data)).toBe(true);

        // A view capability cannot upload, even by hand.
        const refused = await page.evaluate(
          async (token) =>
            (
              await fetch("/files/api/upload?path=bots/alice/x.txt", {
                method: "PUT",
                headers: { Authorization: `Bearer ${token}` },
                body: "x",
              })
            ).status,
          view.token,
        );
        expect(refused).toBe(403);

        // With control, an upload lands and the bot reads it.
        const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:ada", ttlMs: 600_000 });
        const steer = await files.issueFilesCapability({
          computerId,
          botId: "alice",
          mode: "control",
          ttlMs: 600_000,
          control,
        });
        const person = await context.newPage();
        await person.goto(`${origin}${steer.pageUrl}`);
        await person.locator('li[data-path="bots/alice/report.md"]').waitFor();
        await person.locator("#upload").setInputFiles({
          name: "brief.txt",
          mimeType: "text/plain",
          buffer: Buffer.from("from the person\n"),
        });
        await expect.poll(() => person.locator("#status").textContent()).toMatch(/^Uploaded bots\/alice\/brief.txt/);
        await person.locator('li[data-path="bots/alice/brief.txt"]').waitFor();

        // Over the cap: refused, nothing lands.
        await person.locator("#upload").setInputFiles({
          name: "huge.bin",
          mimeType: "application/octet-stream",
          buffer: Buffer.alloc(UPLOAD_MAX + 1, 1),
        });
        await expect.poll(() => person.locator("#status").textContent()).toMatch(/^LIMIT_EXCEEDED/);

        // Cut halfway: 1 MiB announced, half sent, the connection dropped.
        await new Promise<void>((resolve) => {
          const req = httpRequest(`${origin}/files/api/upload?path=bots/alice/cut.bin`, {
            method: "PUT",
            headers: { Authorization: `Bearer ${steer.token}`, "Content-Length": String(1024 * 1024) },
          });
          req.on("error", () => resolve());
          req.on("close", () => resolve());
          req.write(Buffer.alloc(512 * 1024, 7), () => setTimeout(() => req.destroy(), 200));
        });
        await new Promise((r) => setTimeout(r, 500));
        const computer = await runtime.runningMachine(computerId);
        const listing = await (computer as NonNullable<typeof computer>).exec({ shell: "ls -A", cwd: "bots/alice" });
        expect(new TextDecoder().decode(listing.stdout).split("\n").filter(Boolean).sort()).toEqual([
          "brief.txt",
          "data.bin",
          "etc",
          "fresh.txt",
          "passwd",
          "report.md",
        ]);
        await runtime.releaseTakeover(control);

        // The bot's next run reads what the person uploaded.
        const reader = runtime.startRun({ workspaceId, botId: "alice" });
        const read = await (await reader.machine()).exec({ argv: ["cat", "brief.txt"], cwd: "bots/alice" });
        expect(new TextDecoder().decode(read.stdout)).toBe("from the person\n");
        await reader.end("completed");
      } finally {
        files.close();
        server.close();
        await removeComputer(runtime, env.docker, computerId);
      }
    }, 240_000);
  });
}
