import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { PageSnapshot } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createComputerRuntime } from "../runtime/computer-runtime.js";
import type { ActivityEvent } from "./activity-event.js";
import { renderPageSnapshot } from "./browser-tools.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { computerTools } from "./computer-tools.js";
import { textOf } from "./tool-adapters.js";
import { callTool } from "./tool-definition.js";

// The page tools on the fake provider, whose desktops expose the emulator
// browser: real loopback HTTP pages in an in-process DOM.
const LOGIN = `<!doctype html><title>Sign in</title><h1>Sign in</h1>
<form><label>User <input name="user"></label><label>Password <input name="pass" type="password"></label>
<button type="button">Sign in</button></form>
<script>document.querySelector("button").addEventListener("click", () => {
  document.body.innerHTML = "<p>Welcome, " + document.querySelector("[name=user]").value + "</p>";
});</script>`;

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((_req, res) => res.setHeader("content-type", "text/html").end(LOGIN));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe("page tools", () => {
  it("navigate, fill and click by ref; the password never shows in results or activity", async () => {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "browser-tools-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "page", botId: "alpha" });
    const activity: ActivityEvent[] = [];
    const session = new ComputerToolSession({
      run,
      capabilities: runtime.capabilities,
      vision: false,
      onActivity: (e) => activity.push(e),
    });
    const tools = computerTools(session);
    const call = (name: string, input: unknown) => callTool(tools.find((t) => t.name === name)!, input, session);
    const refOf = (snapshot: string, name: string) =>
      new RegExp(`(e\\d+) \\w+ "?${name}["\\]]`).exec(snapshot)?.[1] as string;

    const page = textOf(await call("browser_navigate", { url: base }));
    expect(page).toMatch(/Sign in/);
    await call("browser_act", { ref: refOf(page, "User"), action: "fill", value: "ada" });
    const filled = textOf(
      await call("browser_act", { ref: refOf(page, "Password"), action: "fill", value: "s3cret-pw!" }),
    );
    expect(filled).not.toContain("s3cret-pw!");
    const done = textOf(await call("browser_act", { ref: refOf(page, "Sign in"), action: "click" }));
    expect(done).toMatch(/Welcome, ada/);
    const stale = await call("browser_act", { ref: refOf(page, "User"), action: "fill", value: "x" });
    expect(textOf(stale)).toMatch(/^STALE_REF/);
    expect(JSON.stringify(activity)).not.toContain("s3cret-pw!");
    expect(activity.map((e) => e.tool)).toEqual([
      "browser_navigate",
      "browser_act",
      "browser_act",
      "browser_act",
      "browser_act",
    ]);
    expect(activity[2]?.summary).toMatch(/^fill e\d+ \(10 characters\)$/);
    await run.end("completed");
  });

  it("tells a model without vision to ask a person where the page tools cannot reach; one with vision to act on the box", () => {
    const snapshot: PageSnapshot = {
      snapshotId: "s1",
      url: "https://example.test/pay",
      title: "Pay",
      text: "Card [e1] Pay [e2]",
      textTruncated: false,
      elements: [
        {
          ref: "e1",
          role: "textbox",
          name: "Card",
          bbox: { x: 10, y: 20, width: 200, height: 30 },
          inViewport: true,
          unreachable: "frame",
        },
        { ref: "e2", role: "button", name: "Pay", bbox: { x: 10, y: 60, width: 80, height: 30 }, inViewport: true },
      ],
      omittedElements: 0,
    };
    const blind = renderPageSnapshot(snapshot, false);
    expect(blind).toContain('[e1 textbox "Card" (frame: request_takeover: a person can reach it)]');
    expect(blind).not.toContain("computer_act");
    expect(renderPageSnapshot(snapshot)).toContain("(frame: computer_act at 10,20 200x30)");
  });

  it("writes a name bare where it ends the bracket, quoted where states follow or it could read as one", () => {
    const box = { x: 0, y: 0, width: 10, height: 10 };
    const element = (ref: string, role: string, name: string, more: object = {}) => ({
      ref,
      role,
      name,
      bbox: box,
      inViewport: true,
      ...more,
    });
    const snapshot: PageSnapshot = {
      snapshotId: "s1",
      url: "https://example.test/",
      title: "Mail",
      text: "[e1] [e2] [e3] [e4] [e5] [e6] [e7] [e8]",
      textTruncated: false,
      elements: [
        element("e1", "link", "Q3 budget review"),
        element("e2", "checkbox", "Remember me", { checked: true }),
        element("e3", "button", "Show all checked"),
        element("e4", "link", "[1] Notes"),
        element("e5", "textbox", "Email", { value: "ada@example.test" }),
        element("e6", "textbox", ""),
        element("e7", "button", "Bold", { pressed: true }),
        element("e8", "tab", "Unread selected", { selected: true }),
      ],
      omittedElements: 0,
    };
    expect(renderPageSnapshot(snapshot).split("\n")[1]).toBe(
      '[e1 link Q3 budget review][e2 checkbox "Remember me" checked][e3 button "Show all checked"][e4 link "[1] Notes"][e5 textbox "Email" value="ada@example.test"][e6 textbox][e7 button "Bold" pressed][e8 tab "Unread selected" selected]',
    );
  });

  it("writes elements side by side without the space between them; text beside an element keeps its space", () => {
    const element = (ref: string, role: string, name: string) => ({
      ref,
      role,
      name,
      bbox: { x: 0, y: 0, width: 10, height: 10 },
      inViewport: true,
    });
    const page = (text: string, elements: PageSnapshot["elements"], delta?: PageSnapshot["delta"]): PageSnapshot => ({
      snapshotId: "s2",
      url: "https://example.test/",
      title: "Mail",
      text,
      textTruncated: false,
      elements,
      omittedElements: 0,
      ...(delta ? { delta } : {}),
    });
    const row = [
      element("e1", "button", "Star"),
      element("e2", "link", "Q3 budget review"),
      element("e3", "button", "Next"),
    ];
    // "[e9]" is no element of this snapshot: it stays as the page wrote it, spaces and all.
    expect(
      renderPageSnapshot(page("Inbox [e1] [e2] Priya · Oct 28 [e9] [e3]\n[e1]", row)).split("\n").slice(1),
    ).toEqual([
      "Inbox [e1 button Star][e2 link Q3 budget review] Priya · Oct 28 [e9] [e3 button Next]",
      "[e1 button Star]",
    ]);
    // A delta's new lines are written the same way.
    const delta = { since: "s1", removed: [], unchanged: 4, textUnchanged: false };
    expect(renderPageSnapshot(page("[e1]  [e2]", row.slice(0, 2), delta)).split("\n")[1]).toBe(
      "[e1 button Star][e2 link Q3 budget review]",
    );
  });

  it("without vision: no screen tools, and request_takeover and the missing page browser point at what it has", async () => {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "browser-tools-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "blind", botId: "alpha" });
    const noPages = { ...runtime.capabilities, pageBrowser: false };
    const session = new ComputerToolSession({ run, capabilities: noPages, vision: false });
    const names = computerTools(session).map((t) => t.name);
    expect(names).toContain("request_takeover");
    expect(names).not.toContain("computer_observe");
    expect(names).not.toContain("computer_act");
    const withPages = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: false });
    const navigate = computerTools(withPages).find((t) => t.name === "browser_navigate")!;
    const refused = await callTool(navigate, { url: base }, session);
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/no page browser; you cannot see the screen: call request_takeover/);
    await run.end("completed");
  });
});
