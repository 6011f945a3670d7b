import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { ComputerSpec } from "@agent-computer/core";
import { COMPUTER_LABELS } from "@agent-computer/core";
import type { ComputerScope } from "@agent-computer/leases";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider, withProvision } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { ComputerToolSession } from "../tools/computer-tool-session.js";
import { computerTools } from "../tools/computer-tools.js";
import { textOf } from "../tools/tool-adapters.js";
import { callTool } from "../tools/tool-definition.js";
import { createComputerRuntime } from "./computer-runtime.js";

const SCREEN_LIMIT = 3;

/** A fake provider that remembers every spec it was asked to provision. */
async function setup() {
  const fake = createFakeProvider();
  const provisioned: ComputerSpec[] = [];
  const provider = withProvision(fake, (spec, _ctx, next) => {
    provisioned.push(spec);
    return next();
  });
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "scope-test-")) }),
    screenLimit: SCREEN_LIMIT,
    idleMs: 0,
    leaseTtlMs: 5000,
    deployment: "scope-test",
  });
  /** A computer record an app made itself, under an id of its own. */
  const appComputer = (computerId: string, scope?: ComputerScope) =>
    runtime.leases.createComputer({
      computerId,
      providerKind: fake.kind,
      homeKey: computerId,
      storageId: computerId,
      ...(scope ? { scope } : {}),
    });
  const lastSpec = () => provisioned.at(-1) as ComputerSpec;
  return { runtime, provisioned, appComputer, lastSpec };
}

describe("a Private computer's bot", () => {
  it("starts at the root of its home, where the whole home is its folder; a Team bot in bots/<bot-id>", async () => {
    const { runtime } = await setup();
    const own = runtime.startRun({ workspaceId: "w", botId: "solo", private: true });
    expect(own.workdir).toBe(".");
    const session = new ComputerToolSession({ run: own, capabilities: runtime.capabilities, vision: false });
    const tools = computerTools(session);
    const call = (name: string, input: unknown) => callTool(tools.find((t) => t.name === name)!, input, session);
    await call("write_file", { path: "notes.txt", content: "mine" });
    const machine = await own.machine();
    expect(Buffer.from(await machine.files.read("notes.txt")).toString()).toBe("mine");
    const home = Buffer.from((await machine.exec({ shell: "pwd" })).stdout)
      .toString()
      .trim();
    expect(textOf(await call("shell", { command: "pwd; ls -A" }))).toContain(home);
    expect((await machine.files.list(".")).map((e) => e.path).sort()).toEqual(["notes.txt"]);
    await own.end("completed");
    const team = runtime.startRun({ workspaceId: "w", botId: "solo" });
    expect(team.workdir).toBe("bots/solo");
    await team.end("completed");
  });
});

describe("private computers of two tenants whose ids join alike", () => {
  // Joined plainly, workspace "a-b" with bot "c" and workspace "a" with bot
  // "b-c" were one computer, "private-a-b-c": the second tenant's bot read
  // the first one's files.
  it("are two computers, and neither bot sees the other's home", async () => {
    const { runtime } = await setup();
    const first = runtime.startRun({ workspaceId: "a-b", botId: "c", private: true });
    const firstMachine = await first.machine();
    await firstMachine.files.write(`${first.workdir}/secret.txt`, new TextEncoder().encode("a-b's secret"));
    await first.end("completed");
    const second = runtime.startRun({ workspaceId: "a", botId: "b-c", private: true });
    const secondMachine = await second.machine();
    const found = await secondMachine.exec({ shell: "find . -name secret.txt" });
    await second.end("completed");
    expect(Buffer.from(found.stdout).toString()).toBe("");
    expect(first.computerId).toBe("private-a--b-c");
    expect(second.computerId).toBe("private-a-b--c");
    // Ids without a dash keep their old form; a trailing dash still joins unambiguously.
    expect(runtime.computerIdFor({ workspaceId: "ws1", botId: "alpha", private: true })).toBe("private-ws1-alpha");
    const ids = [
      ["a-", "b"],
      ["a", "b"],
      ["a--", "b"],
      ["a", "b--c"],
      ["a-b", "c"],
      ["a", "b-c"],
    ].map(([workspaceId, botId]) => runtime.computerIdFor({ workspaceId: workspaceId!, botId: botId!, private: true }));
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("a computer's scope comes from its record, not its id", () => {
  it("is stored when a run makes the computer: team with the screen cap, private with its bot's label", async () => {
    const { runtime, lastSpec } = await setup();
    const team = runtime.startRun({ workspaceId: "ws1", botId: "alpha" });
    await team.machine();
    await team.end("completed");
    expect((await runtime.leases.getComputer("team-ws1"))?.scope).toEqual({ kind: "team" });
    expect(lastSpec().screenLimit).toBe(SCREEN_LIMIT);
    expect(lastSpec().labels).toMatchObject({
      [COMPUTER_LABELS.computerId]: "team-ws1",
      [COMPUTER_LABELS.deployment]: "scope-test",
    });
    expect(lastSpec().labels).not.toHaveProperty(COMPUTER_LABELS.botId);

    const own = runtime.startRun({ workspaceId: "ws1", botId: "alpha", private: true });
    await own.machine();
    await own.end("completed");
    expect((await runtime.leases.getComputer("private-ws1-alpha"))?.scope).toEqual({ kind: "private", botId: "alpha" });
    expect(lastSpec().screenLimit).toBe(0);
    expect(lastSpec().labels).toMatchObject({ [COMPUTER_LABELS.botId]: "alpha" });
  });

  it("gives a team computer whose id computerIdFor did not make the team screen limit, in desktopFor and in recovery", async () => {
    const { runtime, provisioned, appComputer, lastSpec } = await setup();
    await appComputer("desk-42", { kind: "team" });
    const desktop = await runtime.desktopFor({ computerId: "desk-42", botId: "alpha" });
    expect(desktop.botId).toBe("alpha");
    expect(lastSpec()).toMatchObject({ computerId: "desk-42", screenLimit: SCREEN_LIMIT });

    const op = await runtime.operations.requestRecovery({ computerId: "desk-42", owner: "owner-1" });
    expect((await runtime.operations.waitFor(op.id)).status).toBe("succeeded");
    expect(provisioned).toHaveLength(2);
    expect(lastSpec()).toMatchObject({ computerId: "desk-42", screenLimit: SCREEN_LIMIT });
    expect((await runtime.leases.getComputer("desk-42"))?.scope).toEqual({ kind: "team" });
  });

  it("gives a private computer under a team-looking id no screen cap and its bot's label", async () => {
    const { runtime, appComputer, lastSpec } = await setup();
    await appComputer("team-lookalike", { kind: "private", botId: "beta" });
    await runtime.desktopFor({ computerId: "team-lookalike", botId: "beta" });
    expect(lastSpec()).toMatchObject({ screenLimit: 0, labels: { [COMPUTER_LABELS.botId]: "beta" } });

    const op = await runtime.operations.requestRecovery({ computerId: "team-lookalike", owner: "owner-1" });
    expect((await runtime.operations.waitFor(op.id)).status).toBe("succeeded");
    expect(lastSpec()).toMatchObject({ screenLimit: 0, labels: { [COMPUTER_LABELS.botId]: "beta" } });
  });

  it("reads a record without a scope as team, and a run that names the scope writes it in", async () => {
    const { runtime, appComputer, lastSpec } = await setup();
    await appComputer("private-ws2-gamma");
    await runtime.desktopFor({ computerId: "private-ws2-gamma", botId: "gamma" });
    expect(lastSpec().screenLimit).toBe(SCREEN_LIMIT);
    await runtime.stopComputer("private-ws2-gamma");

    const run = runtime.startRun({ workspaceId: "ws2", botId: "gamma", private: true });
    await run.machine();
    await run.end("completed");
    expect((await runtime.leases.getComputer("private-ws2-gamma"))?.scope).toEqual({ kind: "private", botId: "gamma" });
    const op = await runtime.operations.requestRecovery({ computerId: "private-ws2-gamma", owner: "owner-1" });
    expect((await runtime.operations.waitFor(op.id)).status).toBe("succeeded");
    expect(lastSpec()).toMatchObject({ screenLimit: 0, labels: { [COMPUTER_LABELS.botId]: "gamma" } });
  });
});
