import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// A hostile bot (a prompt injection steers it) keeps swapping a folder of its
// live home for a link, hoping a host-side export follows it: to a root-only
// folder of the host, and to another tenant's home beside its own. The host
// packs the bind-mounted home while the computer runs (exportWorkspace).
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: live home walk",
);

const EXPORTS = 40;

async function drain(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

if (!env.missing) {
  describe("hostile bot: live home walk", () => {
    const owned: Machine[] = [];
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    });

    it(`packs ${EXPORTS} exports while the bot swaps folders for links: no host or foreign bytes, no failed export`, async () => {
      const dataDir = await temporaryDataDir();
      const provider = env.provider({ dataDir });
      const stamp = Date.now().toString(36);
      // A root-only folder of the host, and another tenant's home beside this one.
      const hostSecret = join(dataDir, "host-secret");
      await mkdir(hostSecret, { recursive: true });
      await writeFile(join(hostSecret, "shadow"), `HOST-SECRET-${stamp}\n`);
      await chmod(hostSecret, 0o700);
      const otherHome = join(dataDir, "homes", `other-${stamp}`);
      await mkdir(join(otherHome, "notes"), { recursive: true });
      await writeFile(join(otherHome, "notes", "diary.txt"), `FOREIGN-HOME-${stamp}\n`);

      const machine = await provider.provision({ computerId: `race-${stamp}`, homeKey: `victim-${stamp}` });
      owned.push(machine);
      // Plenty to walk, so each export takes a while.
      await machine.exec({
        shell:
          "for d in $(seq 1 40); do mkdir -p bulk/$d; for f in $(seq 1 25); do echo $d-$f > bulk/$d/$f; done; done",
      });
      // The bot's loop: renameat2(RENAME_EXCHANGE) swaps a real folder and a
      // link to a target outside the home, over and over, so at any moment
      // the name is one or the other.
      const swapper = [
        "import ctypes, os, sys",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "name, target = sys.argv[1], sys.argv[2]",
        "os.makedirs(name + '/sub', exist_ok=True)",
        "open(name + '/sub/f', 'w').write('ok')",
        "os.symlink(target, name + '.x')",
        "a, b = name.encode(), (name + '.x').encode()",
        "while True: libc.renameat2(-100, a, -100, b, 2)",
      ].join("\n");
      for (const [name, target] of [
        ["a", hostSecret],
        ["bulk/7", `../../other-${stamp}`],
        ["c", "/etc"],
      ] as const) {
        await machine.exec({
          argv: ["sh", "-c", 'setsid python3 -c "$0" "$1" "$2" </dev/null >/dev/null 2>&1 &', swapper, name, target],
        });
      }
      const running = await machine.exec({ shell: "pgrep -fc renameat2 || true" });
      expect(Number(Buffer.from(running.stdout).toString().trim())).toBeGreaterThanOrEqual(3);

      let failed = 0;
      let leaked = 0;
      for (let i = 0; i < EXPORTS; i++) {
        try {
          const archive = await drain(await machine.files.exportWorkspace());
          const text = archive.toString("latin1");
          if (text.includes(`HOST-SECRET-${stamp}`) || text.includes(`FOREIGN-HOME-${stamp}`)) leaked++;
          if (text.includes("root:x:0:0")) leaked++;
        } catch {
          failed++;
        }
      }
      await machine.exec({ shell: "pkill -f renameat2 || true" });
      expect({ leaked, failed }).toEqual({ leaked: 0, failed: 0 });
    }, 240_000);
  });
}
