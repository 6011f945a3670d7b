import { spawn } from "node:child_process";
import { mkdir, mkdtemp, open, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { joinHomeParts } from "./home-parts.js";
import { HOME_TRANSFER_SCRIPTS } from "./home-transfer-scripts.js";
import { restoreHome } from "./restore-home.js";

const TiB = 1024 ** 4;

/** Runs an export script on this host the way providers run it in a machine (`sh -c <script> <name> <home> ...`). */
function exportByScript(
  home: string,
  script: string = HOME_TRANSFER_SCRIPTS.exportHome,
  ...args: string[]
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", script, "export-home", home, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    let errors = "";
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`exit ${code}: ${errors}`)),
    );
  });
}

describe("the in-machine export script", () => {
  it("exports a home holding a 15 TiB file of a few bytes in under 5 s, as an archive the restore reads (issue 45)", async () => {
    const home = await mkdtemp(join(tmpdir(), "ac-script-export-"));
    await mkdir(join(home, "notes"));
    await writeFile(join(home, "notes", "today.txt"), "remember this");
    const handle = await open(join(home, "disk.img"), "w");
    await handle.write("head", 0);
    await handle.write("tail", 15 * TiB - 4);
    await handle.close();
    const started = Date.now();
    const archive = await exportByScript(home);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(archive.length).toBeLessThan(1024 * 1024);
    const target = join(home, "..", `${home.split("/").pop()}-restored`);
    await restoreHome(Readable.from([archive]), target, { maxFileBytes: 16 * TiB, maxTotalBytes: 16 * TiB });
    const restored = await open(join(target, "disk.img"), "r");
    try {
      expect((await restored.stat()).size).toBe(15 * TiB);
      const tail = Buffer.alloc(4);
      await restored.read(tail, 0, 4, 15 * TiB - 4);
      expect(tail.toString()).toBe("tail");
    } finally {
      await restored.close();
    }
  }, 30_000);
});

describe("the two-part export (the display as a second user)", () => {
  const makeHome = async () => {
    const home = await mkdtemp(join(tmpdir(), "ac-script-parts-"));
    await mkdir(join(home, "notes"));
    await writeFile(join(home, "notes", "today.txt"), "remember this");
    await mkdir(join(home, ".browser-profiles", "bot-1", "Default"), { recursive: true });
    await writeFile(join(home, ".browser-profiles", "bot-1", "Default", "Cookies"), "session=1");
    // Transient: left out as packHome leaves it out.
    await writeFile(join(home, ".browser-profiles", "bot-1", "SingletonLock"), "");
    return home;
  };
  const partsOf = async (home: string) => {
    const out = await mkdtemp(join(tmpdir(), "ac-script-part-files-"));
    await exportByScript(home, HOME_TRANSFER_SCRIPTS.exportBotPartToFile, join(out, "bot.tar"));
    await exportByScript(home, HOME_TRANSFER_SCRIPTS.exportProfilesPartToFile, join(out, "profiles.tar"));
    return { bot: await readFile(join(out, "bot.tar")), profiles: await readFile(join(out, "profiles.tar")) };
  };

  it("splits the home at .browser-profiles, and the joined parts restore as the whole home", async () => {
    const home = await makeHome();
    const { bot, profiles } = await partsOf(home);
    expect(bot.includes(Buffer.from("notes/today.txt"))).toBe(true);
    expect(bot.includes(Buffer.from(".browser-profiles"))).toBe(false);
    expect(profiles.includes(Buffer.from(".browser-profiles/bot-1/Default/Cookies"))).toBe(true);
    expect(profiles.includes(Buffer.from("notes/"))).toBe(false);
    const joined = joinHomeParts(Readable.from([bot]), async () => Readable.from([profiles]));
    const target = `${home}-restored`;
    await restoreHome(joined, target, {});
    expect(await readFile(join(target, "notes", "today.txt"), "utf8")).toBe("remember this");
    expect(await readFile(join(target, ".browser-profiles", "bot-1", "Default", "Cookies"), "utf8")).toBe("session=1");
    await expect(readFile(join(target, ".browser-profiles", "bot-1", "SingletonLock"))).rejects.toThrow();
  }, 30_000);

  it("refuses a bot's part cut short of its tar end, and never opens the profiles' part", async () => {
    const { bot, profiles } = await partsOf(await makeHome());
    let opened = false;
    const joined = joinHomeParts(Readable.from([bot.subarray(0, bot.length - 512)]), async () => {
      opened = true;
      return Readable.from([profiles]);
    });
    const read = async () => {
      for await (const _ of joined);
    };
    await expect(read()).rejects.toThrow(/ended early/);
    expect(opened).toBe(false);
  }, 30_000);
});
