import { mkdir, mkdtemp, rename, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { beforeEach, describe, expect, it } from "vitest";
import { LocalAgentHomeStore } from "./local-agent-home-store.js";

// Browsing the latest stored copy in place (issue 29). A mounted home is the
// live folder the bot writes, so these tests write into `store.homeDir` as
// the bot would, links to the host's /etc included.
let root: string;
let store: LocalAgentHomeStore;
let home: string;
const KEY = "team-browse";

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => "resolved",
    (error) => (AgentComputerError.is(error) ? error.code : `untyped: ${error}`),
  );

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-browse-"));
  store = new LocalAgentHomeStore({ dataDir: join(root, "data") });
  home = store.homeDir(KEY);
  await mkdir(join(home, "bots", "alice"), { recursive: true });
  await writeFile(join(home, "bots", "alice", "notes.md"), "hello from the bot\n");
  await store.checkpoint({ homeKey: KEY, source: { mounted: true } });
});

describe("LocalAgentHomeStore list and read", () => {
  it("lists a folder and reads a file and a range of it, from the latest revision", async () => {
    expect(await store.list(KEY, "")).toEqual([
      expect.objectContaining({ name: "bots", path: "bots", kind: "directory", size: 0 }),
    ]);
    const [notes] = await store.list(KEY, "bots/alice/");
    expect(notes).toMatchObject({ name: "notes.md", path: "bots/alice/notes.md", kind: "file", size: 19 });
    expect(notes?.mode).toBe(0o644 & ~process.umask());
    expect(Math.abs((notes?.modifiedAt ?? 0) - Date.now())).toBeLessThan(60_000);
    const whole = await store.read(KEY, "bots/alice/notes.md");
    expect(whole).toMatchObject({ path: "bots/alice/notes.md", size: 19, revision: 1 });
    expect(Buffer.from(whole.bytes).toString()).toBe("hello from the bot\n");
    const part = await store.read(KEY, "bots/./alice/notes.md", { range: { start: 6, end: 10 } });
    expect(Buffer.from(part.bytes).toString()).toBe("from");
    expect((await store.read(KEY, "bots/alice/notes.md", { range: { start: 15, end: 500 } })).bytes.length).toBe(4);
    await store.checkpoint({ homeKey: KEY, source: { mounted: true } });
    expect((await store.read(KEY, "bots/alice/notes.md")).revision).toBe(2);
  });

  it("answers NOT_FOUND for a home without a checkpoint, a missing folder or file; INVALID_ARGUMENT for a folder read", async () => {
    expect(await codeOf(store.list("team-never", ""))).toBe("NOT_FOUND");
    expect(await codeOf(store.list(KEY, "bots/bob"))).toBe("NOT_FOUND");
    expect(await codeOf(store.read(KEY, "bots/alice/missing.txt"))).toBe("NOT_FOUND");
    expect(await codeOf(store.read(KEY, "bots"))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(store.list(KEY, "bots/alice/notes.md"))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(store.read(KEY, "bots/alice/notes.md", { range: { start: 5, end: 2 } }))).toBe(
      "INVALID_ARGUMENT",
    );
    await store.delete(KEY);
    expect(await codeOf(store.list(KEY, ""))).toBe("NOT_FOUND");
  });

  it("refuses .., absolute paths and NUL with a typed error", async () => {
    for (const path of [
      "..",
      "../data",
      "bots/../../x",
      "/etc",
      "/etc/passwd",
      "bots/\0alice",
      "bots/alice/notes.md\0",
    ]) {
      expect(await codeOf(store.list(KEY, path)), path).toBe("INVALID_ARGUMENT");
      expect(await codeOf(store.read(KEY, path)), path).toBe("INVALID_ARGUMENT");
    }
  });

  it("lists a link the bot planted to /etc as a link and never follows it", async () => {
    await symlink("/etc", join(home, "bots", "alice", "etc"));
    await symlink("/etc/passwd", join(home, "bots", "alice", "passwd"));
    await symlink("../../..", join(home, "bots", "alice", "up"));
    const listed = await store.list(KEY, "bots/alice");
    expect(listed.map((e) => [e.name, e.kind, e.size])).toEqual([
      ["etc", "symlink", 0],
      ["notes.md", "file", 19],
      ["passwd", "symlink", 0],
      ["up", "symlink", 0],
    ]);
    for (const path of ["bots/alice/etc", "bots/alice/up", "bots/alice/up/data"])
      expect(await codeOf(store.list(KEY, path)), path).toBe("INVALID_ARGUMENT");
    for (const path of ["bots/alice/passwd", "bots/alice/etc/passwd", "bots/alice/etc/hostname"])
      expect(await codeOf(store.read(KEY, path)), path).toBe("INVALID_ARGUMENT");
  });

  it("never serves a byte from outside while the bot keeps swapping a folder for a link out", async () => {
    const outside = join(root, "outside");
    await mkdir(outside);
    await writeFile(join(outside, "f"), "SECRET-HOST-BYTES");
    const dir = join(home, "bots", "alice", "dir");
    await mkdir(dir);
    await writeFile(join(dir, "f"), "inside");
    const parked = join(home, "bots", "alice", "parked");
    let swapping = true;
    const swapper = (async () => {
      // The bot: the folder, then a link to the host folder in its place, over and over.
      while (swapping) {
        await rename(dir, parked);
        await symlink(outside, dir);
        await new Promise((r) => setImmediate(r));
        await rm(dir);
        await rename(parked, dir);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const seen = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      const got = await store.read(KEY, "bots/alice/dir/f").then(
        (file) => Buffer.from(file.bytes).toString(),
        (error) => (AgentComputerError.is(error) ? error.code : `untyped: ${error}`),
      );
      const listed = await store.list(KEY, "bots/alice/dir").then(
        (entries) => entries.map((e) => e.name).join(","),
        (error) => (AgentComputerError.is(error) ? error.code : `untyped: ${error}`),
      );
      for (const key of [got, `list:${listed}`]) seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    swapping = false;
    await swapper;
    // Only the bot's own bytes or a typed refusal; both sides of the swap were hit.
    expect(
      [...seen.keys()].every((k) =>
        ["inside", "INVALID_ARGUMENT", "NOT_FOUND", "list:f", "list:INVALID_ARGUMENT", "list:NOT_FOUND"].includes(k),
      ),
      JSON.stringify([...seen]),
    ).toBe(true);
    expect(seen.get("inside") ?? 0).toBeGreaterThan(0);
    expect(seen.get("INVALID_ARGUMENT") ?? 0).toBeGreaterThan(0);
  });

  it("lists a 10,000-entry folder whole and sorted, and a name with a newline as it is", async () => {
    const big = join(home, "bots", "alice", "many");
    await mkdir(big);
    const names = Array.from({ length: 10_000 }, (_, i) => `f${String(i).padStart(5, "0")}`);
    await Promise.all(names.map((n) => writeFile(join(big, n), n)));
    const listed = await store.list(KEY, "bots/alice/many");
    expect(listed.length).toBe(10_000);
    expect(listed.map((e) => e.name)).toEqual(names);
    expect(listed.every((e) => e.kind === "file" && e.size === 6)).toBe(true);
    await writeFile(join(home, "bots", "alice", "two\nlines.txt"), "odd name");
    expect((await store.list(KEY, "bots/alice")).map((e) => e.name)).toContain("two\nlines.txt");
    expect(Buffer.from((await store.read(KEY, "bots/alice/two\nlines.txt")).bytes).toString()).toBe("odd name");
  });

  it("reads a range of a 1.5 GB sparse file in bounded memory, and refuses a whole read over the limit", async () => {
    const sparse = join(home, "bots", "alice", "sparse.bin");
    await writeFile(sparse, "");
    await truncate(sparse, 1_500_000_000);
    const before = process.memoryUsage().rss;
    const part = await store.read(KEY, "bots/alice/sparse.bin", {
      range: { start: 1_000_000_000, end: 1_000_001_024 },
    });
    expect(part.size).toBe(1_500_000_000);
    expect(part.bytes.length).toBe(1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(50 * 1024 * 1024);
    expect(await codeOf(store.read(KEY, "bots/alice/sparse.bin"))).toBe("LIMIT_EXCEEDED");
  });
});
