import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import { opContext } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { decodePngSize } from "../conformance/decode-png.js";
import { pixelsOf } from "../provider-test/fixture-site.js";
import { RfbTestClient, refusalOf } from "../provider-test/rfb-test-client.js";
import { TerminalTestClient } from "../provider-test/terminal-test-client.js";
import { createFakeProvider } from "./fake-provider.js";

const spec = { computerId: "c1", homeKey: "h1", labels: { team: "t" } };

describe("fake provider", () => {
  it("refuses an egress policy it cannot enforce", async () => {
    const provider = createFakeProvider({ root: await mkdtemp(join(tmpdir(), "fake-egress-")) });
    await expect(provider.provision({ ...spec, egress: { allow: ["example.com"] } })).rejects.toMatchObject({
      code: "UNSUPPORTED",
    });
  });

  it("keeps machines across provider instances that share a root", async () => {
    const root = await mkdtemp(join(tmpdir(), "fake-root-"));
    const first = createFakeProvider({ root });
    const machine = await first.provision(spec);
    await machine.files.write("kept.txt", new TextEncoder().encode("kept"));
    await machine.stop();
    const second = createFakeProvider({ root });
    expect(await second.list({ labels: { team: "t" } })).toEqual([machine.ref]);
    const again = (await second.reconnect(machine.ref)) as Machine;
    expect(new TextDecoder().decode(await again.files.read("kept.txt"))).toBe("kept");
    await again.destroy();
    expect(await first.reconnect(machine.ref)).toBe("gone");
  });

  it("refuses work on a stopped handle and PROVIDER_GONE after destroy", async () => {
    const provider = createFakeProvider();
    const machine = await provider.provision(spec);
    await machine.stop();
    await expect(machine.exec({ argv: ["true"] })).rejects.toMatchObject({ code: "CONFLICT" });
    const again = (await provider.reconnect(machine.ref)) as Machine;
    expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
    await again.destroy();
    await expect(machine.files.read("x")).rejects.toMatchObject({ code: "PROVIDER_GONE" });
  });

  it("turns a passed context deadline into TIMEOUT and kills the command", async () => {
    const machine = await createFakeProvider().provision(spec);
    const started = Date.now();
    await expect(machine.exec({ shell: "sleep 5" }, opContext({ timeoutMs: 200 }))).rejects.toMatchObject({
      code: "TIMEOUT",
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("reports a missing program as NOT_FOUND", async () => {
    const machine = await createFakeProvider().provision(spec);
    await expect(machine.exec({ argv: ["definitely-not-a-program-xyz"] })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("runs a batch in order and stops at the first failure, marking the rest not-run", async () => {
    const machine = await createFakeProvider({ screen: { width: 100, height: 50 } }).provision(spec);
    const desktop = await machine.openDesktop!("bot");
    const outcome = await desktop.act([
      { type: "move", x: 10, y: 10 },
      { type: "click", x: 500, y: 10 },
      { type: "type", text: "never typed" },
    ]);
    expect(outcome.ok).toBe(false);
    expect(outcome.results.map((r) => r.status)).toEqual(["done", "failed", "not-run"]);
    expect(outcome.results[1]?.error?.code).toBe("INVALID_ARGUMENT");
    expect(outcome.results[1]?.uncertain).toBe(false);
    expect((await desktop.observe()).cursor).toEqual({ x: 10, y: 10 });
  });

  it("draws what was typed on the screen, in its pixel font, under the band with the window's title", async () => {
    const machine = await createFakeProvider({ screen: { width: 320, height: 120 } }).provision(spec);
    const desktop = await machine.openDesktop!("bot");
    const blank = pixelsOf((await desktop.observe()).image as Uint8Array);
    await desktop.act([{ type: "type", text: "hi" }]);
    const typed = pixelsOf((await desktop.observe()).image as Uint8Array);
    // "typed: hi" is the second body line (a blank line first): y = band 24 + 8 + 14, x = 6, each font pixel 2x2.
    const dark = (p: ReturnType<typeof pixelsOf>, x: number, y: number) => (p.at(x, y)[0] as number) < 100;
    // The T: its top row whole (x 6..11), its stem alone below (x 8..9).
    for (const x of [6, 8, 10, 11]) expect(dark(typed, x, 46)).toBe(true);
    expect([dark(typed, 6, 48), dark(typed, 8, 48), dark(typed, 10, 48)]).toEqual([false, true, false]);
    for (const x of [6, 8, 10]) expect(dark(blank, x, 46)).toBe(false);
  });

  it("zooms into a region as a PNG of that size", async () => {
    const machine = await createFakeProvider().provision(spec);
    const desktop = await machine.openDesktop!("bot");
    const outcome = await desktop.act([{ type: "zoom", region: { x: 5, y: 5, width: 40, height: 30 } }]);
    expect(decodePngSize(outcome.results[0]?.image as Uint8Array)).toEqual({ width: 40, height: 30 });
  });

  it("gives the same desktop to the same bot and a new display slot to another", async () => {
    const machine = await createFakeProvider().provision(spec);
    const a = await machine.openDesktop!("bot-a");
    expect(await machine.openDesktop!("bot-a")).toBe(a);
    const b = await machine.openDesktop!("bot-b");
    expect([a.display, b.display]).toEqual([":100", ":101"]);
    await a.release();
    await expect(a.observe()).rejects.toMatchObject({ code: "CONFLICT" });
    expect((await machine.openDesktop!("bot-c")).display).toBe(":100");
  });

  it("pauses desktop actions while quiesced for an export", async () => {
    const machine = await createFakeProvider().provision(spec);
    const desktop = await machine.openDesktop!("bot");
    const resume = await machine.quiesceDesktops!();
    await expect(desktop.act([{ type: "move", x: 1, y: 1 }])).rejects.toMatchObject({ code: "CONFLICT" });
    await resume();
    expect((await desktop.act([{ type: "move", x: 1, y: 1 }])).ok).toBe(true);
  });

  it("serves its drawn screen as RFB: control moves the pointer, view drops input; refused without the token, after a revoke or a release", async () => {
    const machine = await createFakeProvider().provision(spec);
    const desktop = await machine.openDesktop!("bot");
    const control = await desktop.screenEndpoint("control");
    const client = await RfbTestClient.open(control);
    const init = await client.handshake();
    expect(init).toMatchObject({ banner: "RFB 003.008\n", width: 640, height: 400, bitsPerPixel: 32 });
    client.useRawEncoding();
    client.requestFrame(640, 400, false);
    expect(await client.readFrame(32)).toBe(640 * 400 * 4);
    client.pointer(101, 202);
    await expect
      .poll(async () => (await desktop.observe(undefined, { includeImage: false })).cursor)
      .toEqual({ x: 101, y: 202 });
    client.close();

    const view = await desktop.screenEndpoint("view");
    const watcher = await RfbTestClient.open(view);
    await watcher.handshake();
    watcher.pointer(7, 9);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 101, y: 202 });

    expect((await refusalOf(view.url)).status).toBe(401);
    expect((await refusalOf(view.url, { token: "not-the-token" })).status).toBe(401);
    await desktop.revokeEndpoint!(view.id);
    expect((await watcher.closed).code).toBe(1008);
    expect((await refusalOf(view.url, { token: view.token })).status).toBe(410);
    const later = await desktop.screenEndpoint("view");
    await desktop.release();
    expect((await refusalOf(later.url, { token: later.token })).status).toBe(410);
    await machine.destroy();
  });

  it("gives a terminal a simulated shell that runs its lines in the bot's folder, under a live control capability", async () => {
    const machine = await createFakeProvider().provision(spec);
    await machine.exec({ argv: ["mkdir", "-p", "bots/bot"] });
    const desktop = await machine.openDesktop!("bot");
    const control = await desktop.screenEndpoint("control");
    const endpoint = await desktop.terminalEndpoint!(undefined, { ttlMs: 60_000, controlId: control.id } as never);
    const shell = await TerminalTestClient.open(endpoint);
    await shell.waitFor(/\$ $/);
    const [, folder] = await shell.run("echo in=$(basename $(pwd)) sum=$((6*7))", /in=(\S+) sum=42/);
    expect(folder).toBe("bot");
    // The control capability ends: so does its terminal.
    await desktop.revokeEndpoint!(control.id);
    expect((await shell.closed).code).toBe(1008);
    await expect(desktop.terminalEndpoint!(undefined, { controlId: control.id } as never)).rejects.toMatchObject({
      code: "FENCED_OUT",
    });
    // `exit` ends a session as a shell's exit does.
    const own = await TerminalTestClient.open(await desktop.terminalEndpoint!());
    own.type("exit\r");
    expect((await own.closed).code).toBe(1000);
    await machine.destroy();
  });
});

describe("fake provider background processes", () => {
  it("kills what a command left running in the background when the machine is destroyed", async () => {
    const machine = await createFakeProvider().provision(spec);
    await machine.exec({ shell: "(sleep 30 & echo $! > bg.pid) && sleep 0.2" });
    const pid = Number(new TextDecoder().decode(await machine.files.read("bg.pid")));
    // Running, as opposed to gone or a zombie no init process reaped yet.
    const running = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
      } catch {
        return false;
      }
    };
    expect(running()).toBe(true);
    await machine.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(running()).toBe(false);
  });
});
