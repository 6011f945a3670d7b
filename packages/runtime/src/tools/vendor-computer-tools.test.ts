import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { createComputerRuntime } from "../runtime/computer-runtime.js";
import type { ActivityEvent } from "./activity-event.js";
import { anthropicComputerTool } from "./anthropic-computer-tool.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { openAiComputerTool } from "./openai-computer-tool.js";
import { textOf } from "./tool-adapters.js";

// The vendors' tools on the fake provider's desktop (drawn in memory, no
// scaling): the session's de-duplication, guard and activity, and the
// errors a model reads. The Docker desktop with scaling and real pixels is
// examples/ai-sdk/test/vendor-computer-tools.test.ts.

async function setup() {
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "vendor-tools-")) }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId: "tools", botId: "alpha" });
  const activity: ActivityEvent[] = [];
  const session = new ComputerToolSession({
    run,
    capabilities: runtime.capabilities,
    vision: true,
    onActivity: (e) => activity.push(e),
  });
  return { session, activity };
}

describe("anthropicComputerTool", () => {
  it("declares the display's size when it fits Anthropic's image limits, and answers screenshot once per frame", async () => {
    const { session } = await setup();
    const computer = anthropicComputerTool(session);
    expect(computer.version).toBe("computer_20251124");
    const { model, display } = await computer.scaling();
    expect(model).toEqual(display);
    const first = await computer.execute({ action: "screenshot" });
    expect(first.content.map((c) => c.type)).toEqual(["text", "image"]);
    expect(textOf(first)).toMatch(new RegExp(`^Screen ${model.width}x${model.height}, cursor at`));
    const second = await computer.execute({ action: "screenshot" });
    expect(second.content.map((c) => c.type)).toEqual(["text"]);
    expect(textOf(second)).toMatch(/Unchanged since your last screenshot/);
  });

  it("runs actions as computer_act batches: activity, the repeated-action guard, the cursor read back", async () => {
    const { session, activity } = await setup();
    const computer = anthropicComputerTool(session);
    await computer.execute({ action: "screenshot" });
    const moved = await computer.execute({ action: "mouse_move", coordinate: [40, 30] });
    expect(textOf(moved)).toMatch(/All 1 action\(s\) done\. The screen changed\./);
    expect(textOf(await computer.execute({ action: "cursor_position" }))).toBe("The cursor is at X=40, Y=30.");
    expect(textOf(await computer.execute({ action: "mouse_move", coordinate: [40, 30] }))).toMatch(
      /The screen did not change/,
    );
    const refused = await computer.execute({ action: "mouse_move", coordinate: [40, 30] });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^Refused: you repeated exactly the same action/);
    expect(activity.map((e) => [e.tool, e.summary])).toEqual([
      ["computer_act", "desktop: move"],
      ["computer_act", "desktop: move"],
    ]);
  });

  it("answers malformed calls with an error result the model can read, never a throw", async () => {
    const { session } = await setup();
    const computer = anthropicComputerTool(session);
    const cases: [unknown, RegExp][] = [
      [{ action: "fly" }, /^INVALID_ARGUMENT: Unknown Anthropic computer action "fly"/],
      [
        { action: "left_click_drag", coordinate: [1, 1] },
        /left_click_drag start_coordinate needs non-negative x and y/,
      ],
      [{ action: "type" }, /Action type needs text/],
      [{ action: "scroll", scroll_direction: "sideways" }, /scroll_direction must be up, down, left or right/],
      [{ action: "zoom", region: [10, 10, 5, 5] }, /zoom region needs x2 > x1/],
      [undefined, /Unknown Anthropic computer action ""/],
    ];
    for (const [input, message] of cases) {
      const result = await computer.execute(input as never);
      expect(result.isError, JSON.stringify(input)).toBe(true);
      expect(textOf(result)).toMatch(message);
    }
    expect(textOf(await computer.execute({ action: "key", text: "Tab", repeat: 3 }))).toMatch(
      /repeat is not an input of computer_20251124/,
    );
    const toolset = anthropicComputerTool(session, { version: "computer_toolset_20260801" });
    expect(textOf(await toolset.execute({ action: "key", text: "Tab", repeat: 3 }))).toMatch(/All 3 action\(s\) done/);
    expect(textOf(await toolset.execute({ action: "key", text: "Tab", repeat: 0 }))).toMatch(
      /repeat must be a whole number/,
    );
    const older = anthropicComputerTool(session, { version: "computer_20250124" });
    expect(textOf(await older.execute({ action: "zoom", region: [0, 0, 10, 10] }))).toMatch(
      /zoom is not an action of computer_20250124/,
    );
  });

  it("refuses a NUL in typed text or keys as INVALID_ARGUMENT before the desktop is asked anything", async () => {
    const { session, activity } = await setup();
    const anthropic = anthropicComputerTool(session);
    const openAi = openAiComputerTool(session);
    const refusals = [
      await anthropic.execute({ action: "type", text: "ok\u0000then" }),
      await anthropic.execute({ action: "key", text: "ctrl+\u0000" }),
      await anthropic.execute({ action: "left_click", coordinate: [5, 5], text: "shift+\u0000" }),
      await openAi.execute({ type: "type", text: "\u0000" }),
    ];
    for (const refused of refusals) {
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/^INVALID_ARGUMENT: .*NUL character/);
    }
    // Refused before the batch: no computer_act ran, not even a failed one.
    expect(activity).toEqual([]);
  });

  it("refuses a model screen the desktop cannot scale screenshots to with UNSUPPORTED", async () => {
    const { session } = await setup();
    const computer = anthropicComputerTool(session, { modelWidth: 200 });
    const { model, display } = await computer.scaling();
    expect(model.width).toBe(200);
    expect(model.height).toBe(Math.round((display.height * 200) / display.width));
    const result = await computer.execute({ action: "screenshot" });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^UNSUPPORTED: This desktop cannot scale screenshots/);
  });
});

describe("openAiComputerTool", () => {
  it("runs an OpenAI batch as one desktop batch, and refuses a malformed one readably", async () => {
    const { session, activity } = await setup();
    const computer = openAiComputerTool(session);
    const result = await computer.execute({
      actions: [
        { type: "move", x: 10, y: 12 },
        { type: "click", x: 10, y: 12 },
        { type: "keypress", keys: ["CTRL", "A"] },
        { type: "screenshot" },
      ],
    });
    expect(textOf(result)).toMatch(/All 3 action\(s\) done\./);
    expect(result.content.some((c) => c.type === "image")).toBe(true);
    expect(activity.at(-1)?.summary).toBe("desktop: move, click, key");
    const bad = await computer.execute({ actions: [{ type: "click", x: 1, y: 1, button: "back" }] });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/^INVALID_ARGUMENT: click button "back" is not supported/);
    expect(textOf(await computer.execute({ actions: [] }))).toMatch(/batch of OpenAI computer actions is empty/);
  });
});
