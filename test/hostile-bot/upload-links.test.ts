import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFiles } from "@agent-computer/screens";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";
import { removeComputer } from "../support/remove-computer.js";

// A hostile bot (a prompt injection steers it) plants links in its own folder
// into another bot's, hoping the person's next upload through the Files
// window follows one and overwrites that bot's file. Then it keeps swapping
// its upload folder for such a link while the person uploads. On a real
// Docker computer: the upload script runs in the machine (issue 45, 8).
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: uploads through links",
);

const RACED_UPLOADS = 30;

if (!env.missing) {
  describe("hostile bot: uploads through links", () => {
    it("refuses an upload through a planted link, and no raced upload lands outside the bot's folder", async () => {
      const dataDir = await temporaryDataDir();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const runtime = createComputerRuntime({
        provider: env.provider({ dataDir }),
        stateStore: new MemoryStateStore(),
        homeStore,
        idleMs: 0,
      });
      const files = createFiles({ runtime, homeStore, secret: randomBytes(32) });
      const server = createServer((req, res) => {
        if (!files.handleRequest(req, res)) res.writeHead(404).end();
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const workspaceId = `upload-links-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alice" });
      try {
        const run = runtime.startRun({ workspaceId, botId: "alice" });
        const machine = await run.machine();
        await machine.files.write("bots/bob/notes.txt", new TextEncoder().encode("bob's own notes"));
        await machine.exec({
          shell: "mkdir -p inbox && ln -s ../bob shared && ln -s ../bob/notes.txt notes.txt",
          cwd: "bots/alice",
        });
        // The swapper: renameat2(RENAME_EXCHANGE) trades the real inbox and a
        // link to bob's folder, over and over (as home-walk-race.test.ts does).
        const swapper = [
          "import ctypes, os",
          "libc = ctypes.CDLL(None, use_errno=True)",
          "os.symlink('../bob', 'inbox.x')",
          "while True: libc.renameat2(-100, b'inbox', -100, b'inbox.x', 2)",
        ].join("\n");
        await machine.exec({
          argv: ["sh", "-c", 'setsid python3 -c "$0" </dev/null >/dev/null 2>&1 &', swapper],
          cwd: "bots/alice",
        });
        await run.end("completed");

        const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:ada", ttlMs: 600_000 });
        const steer = await files.issueFilesCapability({
          computerId,
          botId: "alice",
          mode: "control",
          ttlMs: 600_000,
          control,
        });
        const put = (path: string, body: string) =>
          fetch(`${origin}/files/api/upload?${new URLSearchParams({ path })}`, {
            method: "PUT",
            headers: { Authorization: `Bearer ${steer.token}` },
            body,
          });

        for (const path of ["bots/alice/shared/notes.txt", "bots/alice/notes.txt"]) {
          const refused = await put(path, "the person's upload");
          const answer = (await refused.json()) as { code: string; message: string };
          expect([refused.status, answer.code], path).toEqual([400, "INVALID_ARGUMENT"]);
          expect(answer.message).toContain("passes through a link");
        }
        let landed = 0;
        for (let i = 0; i < RACED_UPLOADS; i++) {
          const answer = await put(`bots/alice/inbox/upload-${i}.txt`, `raced ${i}`);
          // Through the link it is refused; into the real folder (whatever its name by then) it lands.
          expect([201, 400], `upload ${i}`).toContain(answer.status);
          if (answer.status === 201) landed++;
        }
        await runtime.releaseTakeover(control);

        // The bot's next run looks: bob's folder as it was, every upload in alice's real folder
        // (named inbox or inbox.x after the swaps).
        const checker = runtime.startRun({ workspaceId, botId: "alice" });
        const after = await checker.machine();
        const shell = async (line: string) => new TextDecoder().decode((await after.exec({ shell: line })).stdout);
        await shell("pkill -f renameat2 || true");
        expect(await shell("cat bots/bob/notes.txt")).toBe("bob's own notes");
        expect(await shell("find bots/bob -mindepth 1 -printf '%P\\n'")).toBe("notes.txt\n");
        expect(Number((await shell("find bots/alice -type f -name 'upload-*' | wc -l")).trim())).toBe(landed);
        expect(landed).toBeGreaterThan(0);
        await checker.end("completed");
      } finally {
        files.close();
        server.close();
        await removeComputer(runtime, env.docker, computerId);
      }
    }, 240_000);
  });
}
