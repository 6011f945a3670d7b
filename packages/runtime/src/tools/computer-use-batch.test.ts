import type { ActOutcome, DesktopAction, DesktopSession, Observation } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import type { BotRun } from "../runtime/bot-run.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { runComputerUseBatch } from "./computer-use-batch.js";
import { textOf } from "./tool-adapters.js";

/**
 * A desktop whose app repaints `repaintMs` after each input, as a browser
 * under load does: the title changes at once, the pixels later. A stub,
 * because the point is the timing, which a real display gives only by
 * chance (examples/ai-sdk/test/vendor-computer-tools.test.ts runs the real one).
 */
function lateRepaintingDesktop(repaintMs: number) {
  let frame = "before";
  let observes = 0;
  const look = (): Observation => ({
    mimeType: "image/png",
    width: 100,
    height: 100,
    cursor: { x: 0, y: 0 },
    frameHash: frame,
    image: new TextEncoder().encode(frame),
    takenAt: Date.now(),
  });
  const desktop = {
    observe: async () => {
      observes++;
      return look();
    },
    act: async (actions: DesktopAction[]): Promise<ActOutcome> => {
      setTimeout(() => {
        frame = `after ${actions.length}`;
      }, repaintMs);
      return { ok: true, results: actions.map((a, index) => ({ index, type: a.type, status: "done" })) };
    },
  } as unknown as DesktopSession;
  return { desktop, observes: () => observes };
}

function sessionOn(desktop: DesktopSession): ComputerToolSession {
  const run = { computerId: "c-1", botId: "alpha" } as unknown as BotRun;
  const session = new ComputerToolSession({ run, capabilities: {} as never, vision: true });
  session.desktop = async () => desktop;
  session.lastFrameHash = "before";
  return session;
}

describe("a desktop batch's screenshot", () => {
  it("waits for the screen to settle, so a late repaint is in the image the model gets", async () => {
    const { desktop } = lateRepaintingDesktop(250);
    const result = await runComputerUseBatch(
      sessionOn(desktop),
      { actions: [{ type: "click", x: 5, y: 5, button: "left", count: 1 }] },
      undefined,
    );
    expect(textOf(result)).toMatch(/The screen changed/);
    const image = result.content.find((c) => c.type === "image");
    expect(image?.type === "image" && new TextDecoder().decode(image.data)).toBe("after 1");
  });

  it("gives up waiting after its budget on a screen that never stops changing", async () => {
    const { desktop } = lateRepaintingDesktop(0);
    let tick = 0;
    const busy = setInterval(() => tick++, 20);
    const observe = desktop.observe.bind(desktop);
    desktop.observe = async (...args) => ({ ...(await observe(...args)), frameHash: `video ${tick}` });
    const started = Date.now();
    try {
      const result = await runComputerUseBatch(
        sessionOn(desktop),
        { actions: [{ type: "key", keys: "a" }] },
        undefined,
      );
      expect(textOf(result)).toMatch(/All 1 action\(s\) done/);
    } finally {
      clearInterval(busy);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("does not wait after a batch that changes nothing visual", async () => {
    const { desktop, observes } = lateRepaintingDesktop(0);
    const started = Date.now();
    await runComputerUseBatch(sessionOn(desktop), { actions: [{ type: "wait", ms: 10 }] }, undefined);
    expect(Date.now() - started).toBeLessThan(150);
    expect(observes()).toBe(1);
  });
});
