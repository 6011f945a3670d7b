import { randomBytes } from "node:crypto";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { type ActivityEvent, createComputerRuntime, LocalAgentHomeStore } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterEach, describe, expect, it } from "vitest";
import { createFiles } from "./create-files.js";
import { DOWNLOAD_CHUNK_BYTES } from "./files-download.js";

// How the files service moves bytes (the fake provider, real HTTP): an
// upload streamed into the machine while it arrives, and what a cut, a lost
// control or a folder moved mid-upload leave; a download in as few commands
// as it has chunks, refusals as statuses.
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((r) => server.close(r));
});

async function setup() {
  const dataDir = await temporaryDataDir();
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore,
    idleMs: 0,
  });
  // The machine the service gets, its commands counted; `between` runs after each (a bot acting meanwhile).
  const commands: string[][] = [];
  const hooks: { between?: () => Promise<void>; beforeLeaseCheck?: () => Promise<void> } = {};
  const counted = (machine: Machine): Machine =>
    new Proxy(machine, {
      get: (target, key) =>
        key === "exec"
          ? async (req: Parameters<Machine["exec"]>[0], ctx?: Parameters<Machine["exec"]>[1]) => {
              commands.push(req.argv ?? [req.shell ?? ""]);
              const result = await target.exec(req, ctx);
              await hooks.between?.();
              return result;
            }
          : Reflect.get(target, key),
    });
  const activity: ActivityEvent[] = [];
  const files = createFiles({
    runtime: {
      runningMachine: async (id) => {
        const machine = await runtime.runningMachine(id);
        return machine && counted(machine);
      },
      leases: {
        getComputer: (id) => runtime.leases.getComputer(id),
        assertCurrent: async (lease) => {
          await hooks.beforeLeaseCheck?.();
          return runtime.leases.assertCurrent(lease);
        },
      },
    },
    homeStore,
    secret: randomBytes(32),
    uploadMaxBytes: 4 * 1024 * 1024,
    onActivity: (e) => activity.push(e),
  });
  const server = createServer((req, res) => {
    if (!files.handleRequest(req, res)) res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const workspaceId = `transfer-${Date.now().toString(36)}`;
  const computerId = runtime.computerIdFor({ workspaceId, botId: "alice" });
  const run = runtime.startRun({ workspaceId, botId: "alice" });
  await run.machine();
  await run.end("completed");
  // The computer's own machine, not the ended run's (fenced to its lease).
  const machine = (await runtime.runningMachine(computerId)) as Machine;
  const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:ada", ttlMs: 60_000 });
  const steer = await files.issueFilesCapability({
    computerId,
    botId: "alice",
    mode: "control",
    ttlMs: 60_000,
    control,
  });
  const names = async (folder: string) => (await machine.files.list(folder)).map((e) => e.name);
  const text = async (path: string) => new TextDecoder().decode(await machine.files.read(path));
  /** An upload that sends `first` of its declared `size` bytes and waits for the step after: its answer, status and JSON. */
  const partialUpload = (path: string, size: number, first: Buffer) => {
    const req = httpRequest(`${origin}/files/api/upload?${new URLSearchParams({ path })}`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${steer.token}`, "Content-Length": String(size) },
    });
    const answer = new Promise<{ status: number; body: { code?: string } } | "cut">((resolve) => {
      req.on("response", (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString()) }),
        );
      });
      req.on("error", () => resolve("cut"));
    });
    req.write(first);
    return { req, answer };
  };
  /** Resolves once a temporary upload file shows in `folder`: the machine is writing while the body still arrives. */
  const writing = async (folder: string) => {
    for (let i = 0; i < 200; i++) {
      if ((await names(folder)).some((n) => n.includes(".upload-"))) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no upload began writing in ${folder}`);
  };
  /** Resolves once the service recorded `n` upload attempts (it finished with them). */
  const recorded = async (n: number) => {
    for (let i = 0; i < 400 && activity.length < n; i++) await new Promise((r) => setTimeout(r, 25));
    return activity.map((e) => [e.summary, e.ok, e.error?.code]);
  };
  return {
    runtime,
    files,
    origin,
    machine,
    control,
    steer,
    commands,
    hooks,
    names,
    text,
    partialUpload,
    writing,
    recorded,
  };
}

describe("files service transfers", () => {
  it("streams an upload into the machine as it arrives; a cut one leaves the old file and no other", async () => {
    const { machine, names, text, partialUpload, writing, recorded } = await setup();
    await machine.files.write("bots/alice/report.txt", new TextEncoder().encode("version one"));
    const { req, answer } = partialUpload("bots/alice/report.txt", 2000, Buffer.alloc(1000, 7));
    // Half the body is in the machine already, under a temporary name.
    await writing("bots/alice");
    req.destroy();
    expect(await answer).toBe("cut");
    expect(await recorded(1)).toEqual([["upload bots/alice/report.txt", false, "ABORTED"]]);
    expect(await names("bots/alice")).toEqual(["report.txt"]);
    expect(await text("bots/alice/report.txt")).toBe("version one");
  });

  it("starts no write for an upload cut while its checks ran", async () => {
    const { names, partialUpload, recorded, hooks, commands } = await setup();
    const { req, answer } = partialUpload("bots/alice/early.txt", 2000, Buffer.alloc(1000, 7));
    hooks.beforeLeaseCheck = async () => {
      hooks.beforeLeaseCheck = undefined;
      req.destroy();
      await new Promise((r) => setTimeout(r, 200));
    };
    expect(await answer).toBe("cut");
    expect(await recorded(1)).toEqual([["upload bots/alice/early.txt", false, "ABORTED"]]);
    expect(await names("bots/alice")).toEqual([]);
    expect(commands).toEqual([]);
  });

  it("renames nothing when control ended while the bytes arrived", async () => {
    const { runtime, machine, control, names, text, partialUpload, writing, recorded } = await setup();
    await machine.files.write("bots/alice/report.txt", new TextEncoder().encode("version one"));
    const { req, answer } = partialUpload("bots/alice/report.txt", 2000, Buffer.alloc(1000, 7));
    await writing("bots/alice");
    await runtime.releaseTakeover(control);
    req.end(Buffer.alloc(1000, 8));
    const refused = await answer;
    expect(refused !== "cut" && [refused.status, refused.body.code]).toEqual([403, "LEASE_LOST"]);
    expect((await recorded(1))[0]).toEqual(["upload bots/alice/report.txt", false, "LEASE_LOST"]);
    expect(await names("bots/alice")).toEqual(["report.txt"]);
    expect(await text("bots/alice/report.txt")).toBe("version one");
  });

  it("refuses an upload whose folder was moved into another bot's while the bytes arrived", async () => {
    const { machine, names, partialUpload, writing } = await setup();
    await machine.files.write("bots/alice/drafts/keep.txt", new TextEncoder().encode("kept"));
    await machine.files.write("bots/bob/notes.txt", new TextEncoder().encode("bob's"));
    const { req, answer } = partialUpload("bots/alice/drafts/new.txt", 2000, Buffer.alloc(1000, 7));
    await writing("bots/alice/drafts");
    // The bot moves the folder the upload stands in under bob's, and leaves a link where it was.
    await machine.exec({ shell: "mv drafts ../bob/drafts && ln -s ../bob/drafts drafts", cwd: "bots/alice" });
    req.end(Buffer.alloc(1000, 8));
    const refused = await answer;
    expect(refused !== "cut" && [refused.status, refused.body.code]).toEqual([400, "INVALID_ARGUMENT"]);
    expect(await names("bots/bob/drafts")).toEqual(["keep.txt"]);
  });

  it("takes an upload without a declared length whole, within the cap", async () => {
    const { origin, steer, text } = await setup();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("streamed "));
        controller.enqueue(new TextEncoder().encode("in parts"));
        controller.close();
      },
    });
    const saved = await fetch(`${origin}/files/api/upload?path=bots/alice/parts.txt`, {
      method: "PUT",
      body,
      headers: { Authorization: `Bearer ${steer.token}` },
      duplex: "half",
    } as RequestInit);
    expect([saved.status, await saved.json()]).toEqual([201, { path: "bots/alice/parts.txt", size: 17 }]);
    expect(await text("bots/alice/parts.txt")).toBe("streamed in parts");
  });

  it("downloads in one command per chunk, with no command that reads nothing, as long as the file was; refusals are statuses", async () => {
    const { origin, steer, machine, commands, hooks } = await setup();
    const get = (path: string) =>
      fetch(`${origin}/files/api/download?${new URLSearchParams({ path })}`, {
        headers: { Authorization: `Bearer ${steer.token}` },
      });
    for (const [size, chunks] of [
      [0, 1],
      [DOWNLOAD_CHUNK_BYTES, 1],
      [DOWNLOAD_CHUNK_BYTES + 5, 2],
    ] as const) {
      const bytes = randomBytes(size);
      await machine.files.write("bots/alice/data.bin", bytes);
      commands.length = 0;
      const got = await get("bots/alice/data.bin");
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes), `${size} bytes`).toBe(true);
      expect(commands.length, `${size} bytes`).toBe(chunks);
    }
    // A file that grows while it downloads is sent as long as it was when the download began.
    const first = randomBytes(DOWNLOAD_CHUNK_BYTES + 5);
    await machine.files.write("bots/alice/growing.bin", first);
    hooks.between = async () => {
      hooks.between = undefined;
      await machine.exec({ shell: "head -c 100 /dev/zero >> bots/alice/growing.bin" });
    };
    const grown = Buffer.from(await (await get("bots/alice/growing.bin")).arrayBuffer());
    expect([grown.length, grown.equals(first)]).toEqual([first.length, true]);
    for (const [path, status, code] of [
      ["bots/alice/missing.bin", 404, "NOT_FOUND"],
      ["bots/alice", 400, "INVALID_ARGUMENT"],
      ["", 400, "INVALID_ARGUMENT"],
    ] as const) {
      const refused = await get(path);
      expect([refused.status, ((await refused.json()) as { code: string }).code], path).toEqual([status, code]);
    }
  });
});
