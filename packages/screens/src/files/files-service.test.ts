import { randomBytes } from "node:crypto";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { MemoryStateStore } from "@agent-computer/leases";
import { type ActivityEvent, createComputerRuntime, LocalAgentHomeStore } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterEach, describe, expect, it } from "vitest";
import { createFiles } from "./create-files.js";

// The files service over real HTTP on the fake provider (machines are host
// folders, commands run for real): what each capability may do, where a
// stopped computer's answers come from, and what a cut upload leaves.
const servers: Server[] = [];
// biome-ignore lint/suspicious/noExplicitAny: the API's JSON, asserted field by field below.
const json = (response: Response): Promise<any> => response.json();
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((r) => server.close(r));
});

async function setup(options: { uploadMaxBytes?: number } = {}) {
  const dataDir = await temporaryDataDir();
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore,
    idleMs: 0,
  });
  const activity: ActivityEvent[] = [];
  const files = createFiles({
    runtime,
    homeStore,
    secret: randomBytes(32),
    previewMaxBytes: 64,
    onActivity: (e) => activity.push(e),
    ...options,
  });
  const server = createServer((req, res) => {
    if (!files.handleRequest(req, res)) res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const workspaceId = `files-${Date.now().toString(36)}`;
  const computerId = runtime.computerIdFor({ workspaceId, botId: "alice" });
  const api = (token: string, op: string, path = "", init: RequestInit = {}) =>
    fetch(`${origin}/files/api/${op}?${new URLSearchParams({ path })}`, {
      ...init,
      headers: { Authorization: `Bearer ${token}` },
    });
  return { runtime, files, homeStore, activity, origin, workspaceId, computerId, api };
}

describe("files service", () => {
  it("lists and previews a stopped computer from the store without starting it, and a running one live", async () => {
    const { runtime, files, workspaceId, computerId, api } = await setup();
    const run = runtime.startRun({ workspaceId, botId: "alice" });
    const machine = await run.machine();
    await machine.files.write("bots/alice/notes.md", new TextEncoder().encode("# Notes\nfirst line\n"));
    await machine.files.write("bots/alice/blob.bin", Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0, 1, 2));
    await machine.files.write("bots/alice/long.txt", new TextEncoder().encode("é".repeat(100)));
    await run.end("completed");
    await runtime.stopComputer(computerId);
    expect(await runtime.runningMachine(computerId)).toBeUndefined();

    const view = await files.issueFilesCapability({ computerId, botId: "alice", mode: "view", ttlMs: 60_000 });
    const listing = await json(await api(view.token, "list", "bots/alice"));
    expect(listing.source).toBe("store");
    expect(listing.entries.map((e: { name: string }) => e.name)).toEqual(["blob.bin", "long.txt", "notes.md"]);
    const text = await json(await api(view.token, "preview", "bots/alice/notes.md"));
    expect(text).toMatchObject({ source: "store", binary: false, truncated: false, text: "# Notes\nfirst line\n" });
    expect(await json(await api(view.token, "preview", "bots/alice/blob.bin"))).toMatchObject({ binary: true });
    // 200 bytes of two-byte characters, cut at 64: the start, whole characters only.
    const long = await json(await api(view.token, "preview", "bots/alice/long.txt"));
    expect(long).toMatchObject({ binary: false, truncated: true, size: 200, text: "é".repeat(32) });
    // Nothing started it.
    expect(await runtime.runningMachine(computerId)).toBeUndefined();
    // A download needs it running.
    const refused = await api(view.token, "download", "bots/alice/notes.md");
    expect([refused.status, (await json(refused)).code]).toEqual([409, "CONFLICT"]);

    const again = runtime.startRun({ workspaceId, botId: "alice" });
    await (await again.machine()).files.write("bots/alice/new.txt", new TextEncoder().encode("fresh"));
    const live = await json(await api(view.token, "list", "bots/alice"));
    expect(live.source).toBe("computer");
    expect(live.entries.map((e: { name: string }) => e.name)).toContain("new.txt");
    await again.end("completed");
  });

  it("downloads byte-identical; refuses .., absolute paths and a link out of the home", async () => {
    const { runtime, files, workspaceId, computerId, api } = await setup();
    const run = runtime.startRun({ workspaceId, botId: "alice" });
    const machine = await run.machine();
    const bytes = randomBytes(300_000);
    await machine.files.write("bots/alice/data.bin", bytes);
    await machine.exec({ argv: ["ln", "-s", "/etc/passwd", "bots/alice/passwd"] });
    await machine.exec({ argv: ["ln", "-s", "/etc", "bots/alice/etc"] });
    const view = await files.issueFilesCapability({ computerId, botId: "alice", mode: "view", ttlMs: 60_000 });
    const got = await api(view.token, "download", "bots/alice/data.bin");
    expect(got.status).toBe(200);
    expect(got.headers.get("content-disposition")).toContain("data.bin");
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
    // Read in 8 MiB chunks (files-download.ts): exactly one, and five bytes more than one.
    for (const size of [8 * 1024 * 1024, 8 * 1024 * 1024 + 5]) {
      const big = randomBytes(size);
      await machine.files.write("bots/alice/big.bin", big);
      const whole = Buffer.from(await (await api(view.token, "download", "bots/alice/big.bin")).arrayBuffer());
      expect(whole.equals(big), `${size} bytes`).toBe(true);
    }
    for (const [op, path] of [
      ["download", "bots/alice/passwd"],
      ["download", "bots/alice/etc/hostname"],
      ["preview", "bots/alice/passwd"],
      ["list", "bots/alice/etc"],
      ["download", "../../etc/passwd"],
      ["preview", "/etc/passwd"],
      ["list", "bots/\0"],
    ] as const) {
      const answer = await api(view.token, op, path);
      expect(answer.status, `${op} ${path}`).toBe(400);
      expect((await json(answer)).code).toBe("INVALID_ARGUMENT");
    }
    // The link itself is listed as a link.
    const listed = await json(await api(view.token, "list", "bots/alice"));
    expect(listed.entries.find((e: { name: string }) => e.name === "passwd")).toMatchObject({ kind: "symlink" });
    await run.end("completed");
  });

  it("uploads with control under the bot's folder only; refuses view, over the cap, and leaves nothing of a cut upload", async () => {
    const { runtime, files, workspaceId, computerId, api, activity, origin } = await setup({ uploadMaxBytes: 1000 });
    const run = runtime.startRun({ workspaceId, botId: "alice" });
    const machine = await run.machine();
    await run.end("completed");
    const view = await files.issueFilesCapability({ computerId, botId: "alice", mode: "view", ttlMs: 60_000 });
    const refused = await api(view.token, "upload", "bots/alice/in.txt", { method: "PUT", body: "hello" });
    expect([refused.status, (await json(refused)).code]).toEqual([403, "FENCED_OUT"]);

    const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:ada", ttlMs: 60_000 });
    const steer = await files.issueFilesCapability({
      computerId,
      botId: "alice",
      mode: "control",
      ttlMs: 60_000,
      control,
    });
    const saved = await api(steer.token, "upload", "bots/alice/in.txt", { method: "PUT", body: "hello bot" });
    expect([saved.status, await json(saved)]).toEqual([201, { path: "bots/alice/in.txt", size: 9 }]);
    expect(new TextDecoder().decode(await machine.files.read("bots/alice/in.txt"))).toBe("hello bot");

    const outside = await api(steer.token, "upload", "shared/x.txt", { method: "PUT", body: "x" });
    expect([outside.status, (await json(outside)).code]).toEqual([400, "INVALID_ARGUMENT"]);
    const big = await api(steer.token, "upload", "bots/alice/big.bin", { method: "PUT", body: new Uint8Array(1001) });
    expect([big.status, (await json(big)).code]).toEqual([413, "LIMIT_EXCEEDED"]);

    // Cut halfway: the request says 800 bytes, sends 400 and the connection drops.
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${origin}/files/api/upload?path=bots/alice/cut.bin`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${steer.token}`, "Content-Length": "800" },
      });
      req.on("error", () => resolve());
      req.write(Buffer.alloc(400, 7), () => setTimeout(() => req.destroy(), 100));
      req.on("close", () => resolve());
    });
    await new Promise((r) => setTimeout(r, 300));
    const names = (await machine.files.list("bots/alice")).map((e) => e.name);
    expect(names).toEqual(["in.txt"]);

    expect(activity.map((e) => [e.tool, e.summary, e.ok, e.error?.code])).toEqual([
      ["upload_file", "uploaded bots/alice/in.txt (9 bytes)", true, undefined],
      ["upload_file", "upload shared/x.txt", false, "INVALID_ARGUMENT"],
      ["upload_file", "upload bots/alice/big.bin", false, "LIMIT_EXCEEDED"],
      ["upload_file", "upload bots/alice/cut.bin", false, "ABORTED"],
    ]);

    // Control ends with the takeover.
    await runtime.releaseTakeover(control);
    const late = await api(steer.token, "upload", "bots/alice/late.txt", { method: "PUT", body: "late" });
    expect(late.status).toBe(403);
    expect((await machine.files.list("bots/alice")).map((e) => e.name)).toEqual(["in.txt"]);
  });

  it("opens a Private computer at its home and takes uploads there, as the bot's tools see it; a Team one at bots/<bot>", async () => {
    const { runtime, files, workspaceId, computerId: teamId, api } = await setup();
    const steerOf = async (computerId: string, own: boolean) => {
      const run = runtime.startRun({ workspaceId, botId: "alice", private: own });
      const machine = await run.machine();
      expect(run.workdir).toBe(own ? "." : "bots/alice");
      await run.end("completed");
      const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:ada", ttlMs: 60_000 });
      const capability = await files.issueFilesCapability({
        computerId,
        botId: "alice",
        mode: "control",
        ttlMs: 60_000,
        control,
      });
      return { machine, token: capability.token };
    };
    const privateId = runtime.computerIdFor({ workspaceId, botId: "alice", private: true });
    const own = await steerOf(privateId, true);
    expect((await json(await api(own.token, "home"))).folder).toBe(".");
    const saved = await api(own.token, "upload", "report.txt", { method: "PUT", body: "at the home" });
    expect([saved.status, await json(saved)]).toEqual([201, { path: "report.txt", size: 11 }]);
    expect(new TextDecoder().decode(await own.machine.files.read("report.txt"))).toBe("at the home");
    // Still no hidden names, and nothing outside the home.
    expect((await api(own.token, "upload", ".bashrc", { method: "PUT", body: "x" })).status).toBe(400);
    expect((await api(own.token, "upload", "../x.txt", { method: "PUT", body: "x" })).status).toBe(400);

    const team = await steerOf(teamId, false);
    expect((await json(await api(team.token, "home"))).folder).toBe("bots/alice");
    const refused = await api(team.token, "upload", "report.txt", { method: "PUT", body: "x" });
    expect([refused.status, (await json(refused)).message]).toEqual([
      400,
      'Uploads go under bots/alice/ with a name not starting with "."; "report.txt" is not.',
    ]);
  });

  it("refuses an upload through a link the bot planted, at any part of the path, and leaves every file as it was", async () => {
    const { runtime, files, workspaceId, computerId, api, activity } = await setup();
    const run = runtime.startRun({ workspaceId, botId: "alice" });
    const machine = await run.machine();
    const text = (path: string) => machine.files.read(path).then((b) => new TextDecoder().decode(b));
    await machine.files.write("bots/bob/notes.txt", new TextEncoder().encode("bob's own notes"));
    await machine.files.write("bots/alice/real/kept.txt", new TextEncoder().encode("kept"));
    // The bot's links into another bot's folder: a folder, a file, and a folder further down.
    await machine.exec({ shell: "ln -s ../bob shared && ln -s ../bob/notes.txt notes.txt", cwd: "bots/alice" });
    await machine.exec({ shell: "ln -s ../../bob deep", cwd: "bots/alice/real" });
    await run.end("completed");
    const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:ada", ttlMs: 60_000 });
    const steer = await files.issueFilesCapability({
      computerId,
      botId: "alice",
      mode: "control",
      ttlMs: 60_000,
      control,
    });
    const put = (path: string) => api(steer.token, "upload", path, { method: "PUT", body: "the person's upload" });

    for (const path of ["bots/alice/shared/notes.txt", "bots/alice/notes.txt", "bots/alice/real/deep/notes.txt"]) {
      const refused = await put(path);
      const answer = await json(refused);
      expect([refused.status, answer.code], path).toEqual([400, "INVALID_ARGUMENT"]);
      expect(answer.message).toContain("passes through a link");
    }
    const folder = await put("bots/alice/real");
    expect([folder.status, (await json(folder)).code]).toEqual([400, "INVALID_ARGUMENT"]);
    expect(await text("bots/bob/notes.txt")).toBe("bob's own notes");
    // No temporary file left anywhere, and the links are still links.
    expect((await machine.files.list("bots/bob")).map((e) => e.name)).toEqual(["notes.txt"]);
    const alice = await machine.files.list("bots/alice");
    expect(alice.map((e) => [e.name, e.type])).toEqual([
      ["notes.txt", "symlink"],
      ["real", "directory"],
      ["shared", "symlink"],
    ]);
    expect((await machine.files.list("bots/alice/real")).map((e) => e.name)).toEqual(["deep", "kept.txt"]);
    expect(activity.every((e) => e.ok === false && e.error?.code === "INVALID_ARGUMENT")).toBe(true);

    // A real folder, new or old, still takes an upload, and a second one replaces the first.
    expect((await put("bots/alice/new/sub/file.txt")).status).toBe(201);
    expect(await text("bots/alice/new/sub/file.txt")).toBe("the person's upload");
    expect((await api(steer.token, "upload", "bots/alice/real/kept.txt", { method: "PUT", body: "v2" })).status).toBe(
      201,
    );
    expect(await text("bots/alice/real/kept.txt")).toBe("v2");
    expect((await machine.files.list("bots/alice/real")).map((e) => e.name)).toEqual(["deep", "kept.txt"]);
    await runtime.releaseTakeover(control);
  });

  it("refuses a forged, revoked or expired capability, tells open pages to refresh on a bot's command, and ends a revoked page's stream", async () => {
    const { runtime, files, workspaceId, computerId, api, origin } = await setup();
    const run = runtime.startRun({ workspaceId, botId: "alice" });
    await run.machine();
    const view = await files.issueFilesCapability({ computerId, botId: "alice", mode: "view", ttlMs: 60_000 });
    expect((await api(`${view.token.slice(0, -2)}AA`, "list", "bots/alice")).status).toBe(401);
    expect((await api("", "list")).status).toBe(401);
    const stream = await api(view.token, "events");
    const reader = (stream.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    expect((await reader.read()).value).toContain(": open");
    files.notify({ computerId: "team-other" });
    files.notify({ computerId });
    expect((await reader.read()).value).toBe("data: refresh\n\n");
    const other = await files.issueFilesCapability({ computerId, botId: "alice", mode: "view", ttlMs: 60_000 });
    const otherStream = await api(other.token, "events");
    const otherReader = (otherStream.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    expect((await otherReader.read()).value).toContain(": open");
    // Revoked, the page's stream says so and ends: no later "refresh" makes it ask with a dead capability.
    files.revoke(view.pageUrl);
    expect((await reader.read()).value).toBe("data: closed\n\n");
    expect((await reader.read()).done).toBe(true);
    expect((await api(view.token, "list", "bots/alice")).status).toBe(401);
    // Another page's capability is untouched.
    files.notify({ computerId });
    expect((await otherReader.read()).value).toBe("data: refresh\n\n");
    await otherReader.cancel();
    const page = await fetch(`${origin}/files/page`);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self' 'sha256-/);
    expect(await page.text()).not.toContain(view.token);
    await run.end("completed");
  });
});
