import { mkdir, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import { createFakeProvider } from "@agent-computer/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { digestTree } from "../codec/home-tree.test-helpers.js";
import { LocalAgentHomeStore } from "./local-agent-home-store.js";

let root: string;
let dataDir: string;
let work: string;
let store: LocalAgentHomeStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "ac-store-"));
  dataDir = join(root, "data");
  work = join(root, "work");
  await mkdir(join(work, "bots", "b1"), { recursive: true });
  await writeFile(join(work, "bots", "b1", "notes.md"), "first");
  store = new LocalAgentHomeStore({ dataDir });
});

describe("LocalAgentHomeStore", () => {
  it("checkpoints a folder into DATA_DIR/homes with metadata in home-revisions, and restores it", async () => {
    const first = await store.checkpoint({ homeKey: "team-1", source: { dir: work } });
    expect(first).toMatchObject({ homeKey: "team-1", revision: 1, files: 1, bytes: 5, mounted: false });
    expect(first.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await digestTree(join(dataDir, "homes", "team-1"))).toEqual(await digestTree(work));
    const marker = JSON.parse(await readFile(join(dataDir, "home-revisions", "team-1.json"), "utf8"));
    expect(marker.revision).toBe(1);
    await writeFile(join(work, "bots", "b1", "notes.md"), "second");
    expect((await store.checkpoint({ homeKey: "team-1", source: { dir: work } })).revision).toBe(2);
    expect(await store.latest("team-1")).toMatchObject({ revision: 2 });
    const target = join(root, "restored");
    expect(await store.restore({ homeKey: "team-1", target: { dir: target } })).toMatchObject({ revision: 2 });
    expect(await readFile(join(target, "bots", "b1", "notes.md"), "utf8")).toBe("second");
    expect((await readdir(join(dataDir, "homes"))).sort()).toEqual(["team-1"]);
  });

  it("calls commit with the next revision; when it throws nothing advances and the previous copy stays", async () => {
    const seen: number[] = [];
    await store.checkpoint({ homeKey: "h", source: { dir: work }, commit: async (next) => void seen.push(next) });
    const before = await digestTree(join(dataDir, "homes", "h"));
    await writeFile(join(work, "bots", "b1", "notes.md"), "lost work");
    const fenced = new AgentComputerError("FENCED_OUT", "A newer lease holds this home.");
    const error = await store
      .checkpoint({
        homeKey: "h",
        source: { dir: work },
        commit: async (next) => {
          seen.push(next);
          throw fenced;
        },
      })
      .catch((e) => e);
    expect(error).toBe(fenced);
    expect(seen).toEqual([1, 2]);
    expect(await store.latest("h")).toMatchObject({ revision: 1 });
    expect(await digestTree(join(dataDir, "homes", "h"))).toEqual(before);
    expect(await readdir(join(dataDir, "homes"))).toEqual(["h"]);
    expect((await store.checkpoint({ homeKey: "h", source: { dir: work } })).revision).toBe(2);
  });

  describe("a crash between the commit hook and the swap", () => {
    // The first store's hook commits (in the test's stand-in for the record) and then never returns:
    // what it leaves on disk is what a kill -9 at that moment leaves. A second store on the same
    // DATA_DIR is the restarted process.
    async function crashAfterCommit(): Promise<{ revision: number }> {
      const record = { revision: 0 };
      await store.checkpoint({
        homeKey: "h",
        source: { dir: work },
        commit: async (next) => {
          record.revision = next;
        },
      });
      await writeFile(join(work, "bots", "b1", "notes.md"), "second");
      let committed!: () => void;
      const reached = new Promise<void>((resolve) => {
        committed = resolve;
      });
      void store.checkpoint({
        homeKey: "h",
        source: { dir: work },
        commit: async (next) => {
          record.revision = next;
          committed();
          await new Promise(() => {});
        },
      });
      await reached;
      return record;
    }

    it("finishes it when the caller's record has the revision", async () => {
      const record = await crashAfterCommit();
      const restarted = new LocalAgentHomeStore({ dataDir });
      expect(await restarted.latest("h")).toMatchObject({ revision: 1 });
      const target = join(root, "restored");
      const restored = await restarted.restore({
        homeKey: "h",
        target: { dir: target },
        committedRevision: record.revision,
      });
      expect(restored).toMatchObject({ revision: 2 });
      expect(await readFile(join(target, "bots", "b1", "notes.md"), "utf8")).toBe("second");
      expect(await restarted.latest("h")).toMatchObject({ revision: 2 });
      expect((await readdir(join(dataDir, "homes"))).sort()).toEqual(["h"]);
    });

    it("drops it when the record stayed behind, and the next checkpoint still grows the revision", async () => {
      await crashAfterCommit();
      const restarted = new LocalAgentHomeStore({ dataDir });
      const target = join(root, "restored");
      expect(await restarted.restore({ homeKey: "h", target: { dir: target }, committedRevision: 1 })).toMatchObject({
        revision: 1,
      });
      expect(await readFile(join(target, "bots", "b1", "notes.md"), "utf8")).toBe("first");
      expect((await readdir(join(dataDir, "homes"))).sort()).toEqual(["h"]);
      const next = await restarted.checkpoint({ homeKey: "h", source: { dir: work }, committedRevision: 1 });
      expect(next.revision).toBe(2);
    });

    it("leaves it undecided without a committed revision, and a newer checkpoint numbers past it", async () => {
      await crashAfterCommit();
      const restarted = new LocalAgentHomeStore({ dataDir });
      const target = join(root, "restored");
      expect(await restarted.restore({ homeKey: "h", target: { dir: target } })).toMatchObject({ revision: 1 });
      expect((await readdir(join(dataDir, "homes"))).filter((name) => name.includes("pending"))).toHaveLength(1);
      const next = await restarted.checkpoint({ homeKey: "h", source: { dir: work } });
      expect(next.revision).toBe(3);
      expect((await readdir(join(dataDir, "homes"))).sort()).toEqual(["h"]);
    });
  });

  it("serialises checkpoints of one home, and revisions only grow, also across delete", async () => {
    let inFlight = 0;
    let overlapped = false;
    const commit = async () => {
      inFlight++;
      if (inFlight > 1) overlapped = true;
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
    };
    const results = await Promise.all(
      [1, 2, 3].map(() => store.checkpoint({ homeKey: "h", source: { dir: work }, commit })),
    );
    expect(overlapped).toBe(false);
    expect(results.map((r) => r.revision)).toEqual([1, 2, 3]);
    await store.delete("h");
    expect(await store.latest("h")).toBeUndefined();
    expect(await store.restore({ homeKey: "h", target: { dir: join(root, "x") } })).toBeUndefined();
    expect(await readdir(join(dataDir, "homes"))).toEqual([]);
    expect((await store.checkpoint({ homeKey: "h", source: { dir: work } })).revision).toBe(4);
  });

  it("moves a home between machines: export from one, import into another", async () => {
    const provider = createFakeProvider();
    const a = await provider.provision({ computerId: "c1", homeKey: "h" });
    await a.files.write("bots/b1/report.txt", new TextEncoder().encode("made on a"));
    await store.checkpoint({ homeKey: "h", source: { machine: a } });
    const b = await provider.provision({ computerId: "c2", homeKey: "h2" });
    await store.restore({ homeKey: "h", target: { machine: b } });
    expect(new TextDecoder().decode(await b.files.read("bots/b1/report.txt"))).toBe("made on a");
    await a.destroy();
    await b.destroy();
  });

  it("for a mounted home advances only the revision marker", async () => {
    const live = store.homeDir("docker-home");
    await mkdir(live, { recursive: true });
    await writeFile(join(live, "live.txt"), "in place");
    const first = await store.checkpoint({ homeKey: "docker-home", source: { mounted: true } });
    expect(first).toMatchObject({ revision: 1, mounted: true, digest: null, bytes: null });
    expect((await store.checkpoint({ homeKey: "docker-home", source: { mounted: true } })).revision).toBe(2);
    expect(await readFile(join(live, "live.txt"), "utf8")).toBe("in place");
    expect(await store.restore({ homeKey: "docker-home", target: { mounted: true } })).toMatchObject({ revision: 2 });
  });

  it("refuses bad input with INVALID_ARGUMENT naming the path", async () => {
    expect(() => store.checkpoint({ homeKey: "../escape", source: { dir: work } })).toThrow(/homeKey/);
    expect(() => store.checkpoint({ homeKey: "h", source: {} as never })).toThrow(/source/);
    expect(() => new LocalAgentHomeStore({} as never)).toThrow(/dataDir/);
    await expect(store.latest("a/b")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("refuses a hostile machine export and keeps the previous copy", async () => {
    await store.checkpoint({ homeKey: "h", source: { dir: work } });
    const before = await digestTree(join(dataDir, "homes", "h"));
    const { Readable } = await import("node:stream");
    const hostile = Buffer.alloc(1536);
    hostile.write("../../etc/evil", 0);
    const machine = {
      files: {
        exportWorkspace: async () => Readable.from([hostile]),
        importWorkspace: async () => {},
      },
    };
    const error = await store.checkpoint({ homeKey: "h", source: { machine: machine as never } }).catch((e) => e);
    expect(error.code).toBe("RESTORE_REJECTED");
    expect(await digestTree(join(dataDir, "homes", "h"))).toEqual(before);
    expect(await store.latest("h")).toMatchObject({ revision: 1 });
  });
});
