import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import type { ComputerEvent } from "../runtime/computer-event.js";
import { createComputerRuntime } from "../runtime/computer-runtime.js";
import type { ActivityEvent } from "./activity-event.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { computerTools } from "./computer-tools.js";
import { textOf, toJsonSchemaTools, toPiTools } from "./tool-adapters.js";
import { callTool } from "./tool-definition.js";

async function setup(options: { vision?: boolean; desktop?: boolean } = {}) {
  const runtime = createComputerRuntime({
    provider: createFakeProvider({
      capabilities: options.desktop === false ? { desktop: false, multiScreen: false } : {},
    }),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "tools-test-")) }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId: "tools", botId: "alpha" });
  const activity: ActivityEvent[] = [];
  const session = new ComputerToolSession({
    run,
    capabilities: runtime.capabilities,
    vision: options.vision ?? true,
    onActivity: (e) => activity.push(e),
  });
  const tools = computerTools(session);
  const call = (name: string, input: unknown, signal?: AbortSignal) => {
    const tool = tools.find((t) => t.name === name);
    if (!tool) throw new Error(`no tool ${name}`);
    return callTool(tool, input, session, signal);
  };
  return { runtime, run, session, tools, call, activity };
}

describe("computer tools", () => {
  it("offers desktop tools only with a desktop, and screenshot tools only to a model with vision", async () => {
    const names = async (o: { vision?: boolean; desktop?: boolean }) => (await setup(o)).tools.map((t) => t.name);
    const all = ["shell", "read_file", "write_file", "list_files", "attach_file"];
    const page = ["browser_navigate", "browser_snapshot", "browser_act"];
    expect(await names({})).toEqual([
      ...all,
      "computer_observe",
      "computer_act",
      "open_path",
      "launch_app",
      "request_takeover",
      ...page,
    ]);
    expect(await names({ vision: false })).toEqual([...all, "open_path", "launch_app", "request_takeover", ...page]);
    expect(await names({ desktop: false })).toEqual(all);
  });

  it("runs shell commands in the bot's folder and file tools relative to it", async () => {
    const { call } = await setup();
    const shell = await call("shell", { command: "pwd; echo out; echo err >&2; exit 3" });
    expect(textOf(shell)).toMatch(/^exit code 3\nstdout:\n.*\/bots\/alpha\nout\n\nstderr:\nerr/);
    await call("write_file", { path: "notes/a.txt", content: "hello" });
    expect(textOf(await call("read_file", { path: "notes/a.txt" }))).toBe("hello");
    expect(textOf(await call("list_files", { path: "notes" }))).toBe("a.txt  (file, 5 bytes)");
    await call("write_file", { path: "../../shared/team.txt", content: "for all" });
    expect(textOf(await call("shell", { command: "cat ../../shared/team.txt" }))).toContain("for all");
    const outside = await call("read_file", { path: "../../../etc/passwd" });
    expect(outside.isError).toBe(true);
    expect(textOf(await call("read_file", { path: "/etc/passwd" }))).toMatch(
      /^INVALID_ARGUMENT: .*relative to your folder/,
    );
  });

  it("records mutating calls as redacted activity events and leaves read-only calls out", async () => {
    const { call, activity } = await setup();
    const secrets = ["AKIAIOSFODNN7EXAMPLE", "sk-live-abcdefghijklmnop1234", "hunter2-horse", "Pa55word!x"];
    await call("shell", {
      command: `AWS_ACCESS_KEY_ID=${secrets[0]} curl -H "Authorization: Bearer ${secrets[1]}" https://u:${secrets[2]}@example.test; PASSWORD=${secrets[3]} echo "token=${secrets[1]}"`,
    });
    await call("write_file", { path: "x.txt", content: "12345" });
    await call("read_file", { path: "x.txt" });
    await call("list_files", {});
    await call("shell", { command: `echo ${secrets[0]} >&2; exit 1` });
    expect(activity.map((e) => [e.tool, e.ok])).toEqual([
      ["shell", true],
      ["write_file", true],
      ["shell", false],
    ]);
    expect(activity[1]?.summary).toBe("wrote x.txt (5 bytes)");
    const serialised = JSON.stringify(activity);
    for (const secret of secrets) expect(serialised).not.toContain(secret);
    expect(activity[0]?.outputTail).toContain("token=[REDACTED]");
  });

  it("omits an identical frame's image, and refuses a repeated action that changed nothing", async () => {
    const { call } = await setup();
    const first = await call("computer_observe", {});
    expect(first.content.map((c) => c.type)).toEqual(["text", "image"]);
    const second = await call("computer_observe", {});
    expect(second.content.map((c) => c.type)).toEqual(["text"]);
    expect(textOf(second)).toMatch(/that screenshot still holds/);
    const noop = { actions: [{ type: "move", x: 0, y: 0 }] };
    expect(textOf(await call("computer_act", noop))).toMatch(/The screen did not change/);
    const refused = await call("computer_act", noop);
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/repeated exactly the same action.*browser_snapshot/);
    const moved = await call("computer_act", { actions: [{ type: "move", x: 50, y: 60 }] });
    expect(textOf(moved)).toMatch(/The screen changed/);
    expect(moved.content.some((c) => c.type === "image")).toBe(true);
  });

  it("refuses a NUL in typed text or keys as INVALID_ARGUMENT before any action reaches the desktop", async () => {
    const { call, activity } = await setup();
    for (const action of [
      { type: "type", text: "safe\u0000rm -rf ~" },
      { type: "key", keys: "ctrl+\u0000" },
      { type: "key_down", key: "\u0000" },
    ]) {
      const refused = await call("computer_act", { actions: [{ type: "move", x: 1, y: 1 }, action] });
      expect(refused.isError, action.type).toBe(true);
      expect(textOf(refused)).toMatch(/^INVALID_ARGUMENT: .*actions\.1\..*NUL character/);
    }
    // Refused whole: not even the move before it ran, so no act was recorded.
    expect(activity.filter((e) => e.tool === "computer_act")).toEqual([]);
  });

  it("offers no screen-changing tools while a person controls the screen", async () => {
    const { session, run, runtime } = await setup();
    await run.machine();
    run.state = "waiting_takeover";
    const control = await runtime.takeover({
      computerId: run.computerId,
      botId: "alpha",
      holder: "person",
      ttlMs: 10_000,
    });
    expect(computerTools(session).map((t) => t.name)).toEqual([
      "shell",
      "read_file",
      "write_file",
      "list_files",
      "attach_file",
      "computer_observe",
      "request_takeover",
      "browser_snapshot",
    ]);
    await runtime.releaseTakeover(control);
    expect(computerTools(session).map((t) => t.name)).toContain("computer_act");
  });

  it("tells the model to wait or ask while a person controls the screen", async () => {
    const { call, run, runtime } = await setup();
    await call("computer_observe", {});
    run.state = "waiting_takeover";
    const control = await runtime.takeover({
      computerId: run.computerId,
      botId: "alpha",
      holder: "person",
      ttlMs: 10_000,
    });
    run.state = "active";
    const blocked = await call("computer_act", { actions: [{ type: "click", x: 5, y: 5 }] });
    expect(textOf(blocked)).toMatch(/^FENCED_OUT: A person is controlling this screen.*request_takeover/);
    await runtime.releaseTakeover(control);
    expect((await call("computer_act", { actions: [{ type: "click", x: 5, y: 5 }] })).isError).toBeUndefined();
  });

  it("attach_file hands over the bytes with a type, within the size cap, and is in the activity feed", async () => {
    const { call, activity } = await setup();
    await call("shell", { command: "printf 'a,b\\n1,2\\n' > out.csv; head -c 11000000 /dev/zero > big.bin" });
    const attached = await call("attach_file", { path: "out.csv" });
    const file = attached.content.find((c) => c.type === "file");
    expect(file).toMatchObject({ type: "file", name: "out.csv", mimeType: "text/csv" });
    expect(Buffer.from((file as { data: Uint8Array }).data).toString()).toBe("a,b\n1,2\n");
    expect(textOf(await call("attach_file", { path: "big.bin" }))).toMatch(/^LIMIT_EXCEEDED/);
    const attaches = activity.filter((e) => e.tool === "attach_file");
    expect(attaches.map((e) => [e.summary, e.ok, e.error?.code])).toEqual([
      ["attached out.csv (8 bytes)", true, undefined],
      ["attach big.bin", false, "LIMIT_EXCEEDED"],
    ]);
  });

  it("open_path and launch_app open windows on the bot's desktop", async () => {
    const { call } = await setup();
    await call("write_file", { path: "report.pdf", content: "%PDF-1.4" });
    expect(textOf(await call("open_path", { path: "report.pdf" }))).toMatch(/Opened report.pdf/);
    expect(textOf(await call("computer_observe", {}))).toMatch(/active window "xdg-open report.pdf"/);
    expect(textOf(await call("open_path", { path: "missing.pdf" }))).toMatch(/^NOT_FOUND/);
    expect(textOf(await call("launch_app", { name: "browser" }))).toMatch(/Started browser/);
    expect(textOf(await call("computer_observe", {}))).toMatch(/active window "chromium alpha --new-window"/);
    expect(textOf(await call("launch_app", { name: "solitaire" }))).toMatch(/^INVALID_ARGUMENT: .*"name"/);
  });

  it("tells a model without vision, in request_takeover's description, to ask a person where the page tools cannot operate", async () => {
    const described = (tools: { name: string; description: string }[], name: string) =>
      tools.find((t) => t.name === name)?.description ?? "";
    const blind = await setup({ vision: false });
    expect(described(blind.tools, "request_takeover")).toMatch(
      /You cannot see the screen, so also call this whenever the page tools cannot operate: an element browser_snapshot marks for request_takeover, .* or a browser_act that keeps failing\./,
    );
    // Nothing it is offered points it at the screen tools it does not have.
    for (const tool of blind.tools)
      expect(tool.description).not.toMatch(/computer_observe|computer_act|take a screenshot/);
    // A model with vision works the window itself, so its description stays as it was.
    expect(described((await setup()).tools, "request_takeover")).not.toMatch(/page tools|cannot see/);

    // After opening something on the screen it cannot see: read it as a page, or ask a person.
    await blind.call("write_file", { path: "report.pdf", content: "%PDF-1.4" });
    const opened = textOf(await blind.call("open_path", { path: "report.pdf" }));
    expect(opened).toMatch(
      /^Opened report.pdf on your screen; you cannot see the screen: browser_snapshot .* request_takeover/,
    );
    expect(opened).not.toMatch(/screenshot/);
    expect(textOf(await blind.call("launch_app", { name: "browser" }))).toMatch(
      /^Started browser; you cannot see the screen: browser_snapshot/,
    );
  });

  it("open_path refuses a link the bot planted to a file outside its home, and opens a link inside it by its real path", async () => {
    const { call } = await setup();
    await call("shell", { command: "ln -s /etc/passwd passwd; echo hi > notes.txt; ln -s notes.txt inside" });
    expect(textOf(await call("open_path", { path: "passwd" }))).toMatch(/^INVALID_ARGUMENT: "passwd" leads outside/);
    expect(textOf(await call("computer_observe", {}))).not.toMatch(/passwd/);
    expect(textOf(await call("open_path", { path: "inside" }))).toMatch(/Opened inside/);
    expect(textOf(await call("computer_observe", {}))).toMatch(/active window "xdg-open notes.txt"/);
  });

  it("request_takeover lets a person in, and the bot resumes when they release", async () => {
    const { call, run, runtime, activity } = await setup();
    const requested: ComputerEvent[] = [];
    runtime.on((e) => e.type === "takeover-requested" && requested.push(e));
    await call("shell", { command: "true" }); // the run holds its execution lease
    const takeover = { computerId: run.computerId, botId: "alpha", holder: "person", ttlMs: 10_000 };
    await expect(runtime.takeover(takeover)).rejects.toMatchObject({ code: "BOT_BUSY" });
    const waiting = call("request_takeover", { reason: "Please log in to the bank; I must not see the password." });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(run.state).toBe("waiting_takeover");
    const control = await runtime.takeover(takeover);
    let resumed = false;
    void waiting.then(() => (resumed = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(resumed).toBe(false);
    await runtime.releaseTakeover(control);
    expect(textOf(await waiting)).toMatch(/released the screen/);
    expect(run.state).toBe("active");
    expect(activity.at(-1)).toMatchObject({ tool: "request_takeover", ok: true });
    expect(requested[0]?.detail.reason).toBe("Please log in to the bank; I must not see the password.");
  });

  it("adapts to JSON Schema and Pi tools as plain objects", async () => {
    const { tools, session } = await setup();
    const schemas = toJsonSchemaTools(tools);
    expect(schemas.find((t) => t.name === "shell")?.inputSchema).toMatchObject({
      type: "object",
      required: ["command"],
      properties: { command: { type: "string" }, timeoutSeconds: { type: "integer", default: 120 } },
    });
    const pi = toPiTools(tools, session);
    const observe = pi.find((t) => t.name === "computer_observe");
    const result = await observe!.execute("call-1", {});
    const image = result.content.find((c) => c.type === "image") as { data: string };
    expect(Buffer.from(image.data, "base64").subarray(1, 4).toString()).toBe("PNG");
    await expect(pi.find((t) => t.name === "read_file")!.execute("call-2", { path: "nope.txt" })).rejects.toThrow(
      /^NOT_FOUND/,
    );
  });
});
