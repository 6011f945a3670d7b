import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Logger, Machine, SandboxProvider } from "@agent-computer/core";
import { ContentKeyring } from "@agent-computer/home-store-s3";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type ActivityEvent, type ComputerEvent, createComputerRuntime } from "@agent-computer/runtime";
import { SecretVault } from "@agent-computer/secrets";
import { createFakeProvider } from "@agent-computer/testing";
import { chooseTestProvider, PROCESS_MEMORY_SCAN } from "@agent-computer/testing/provider-test";
import type { Context } from "@mariozechner/pi-ai";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { createComputerAgent } from "../src/computer-agent.js";
import { endAndRemove, lastToolResult, servePage } from "./replay-support.js";

// Issue 53, logins by reference: real Pi with a scripted model signs in to a
// site in the computer with a vault password it only names, then tries the
// same secret on another origin. The password is then looked for in every
// place it must not be: the model's transcript, tool results, activity and
// lifecycle events, log lines, the home (which checkpoints pack: the
// browser profile included) and the /proc of the bot's processes.

/** The page checks the password against its reverse, so the page's source does not hold it. */
const loginPage = (reversed: string) => `<!doctype html><title>Sign in</title><body><h1>Sign in</h1>
<form id="f"><label for="u">Username</label><input id="u" autocomplete="username">
<label for="p">Password</label><input id="p" type="password" autocomplete="current-password">
<button type="submit">Sign in</button></form><p id="out"></p><script>
document.getElementById("f").addEventListener("submit", function (e) {
  e.preventDefault();
  var ok = document.getElementById("p").value.split("").reverse().join("") === ${JSON.stringify(reversed)};
  document.getElementById("out").textContent = ok ? "Signed in as " + document.getElementById("u").value : "Wrong password";
});
</script>`;

const refOf = (text: string, pattern: RegExp) => {
  const ref = pattern.exec(text)?.[1];
  if (!ref) throw new Error(`no element matching ${pattern} in:\n${text}`);
  return ref;
};

async function signIn(provider: SandboxProvider, dataDir: string, realMachine: boolean) {
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const port = 8900 + Math.floor(Math.random() * 40) * 2;
  const workspaceId = `secret-${Date.now().toString(36)}`;
  const stateStore = new MemoryStateStore();
  const vault = new SecretVault({ store: stateStore, keyring: new ContentKeyring(randomBytes(32)) });
  await vault.set({ workspaceId, name: "site-login", value: password, origins: [`http://127.0.0.1:${port}`] });
  const logLines: string[] = [];
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    logLines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const logger: Logger = { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
  const events: ComputerEvent[] = [];
  const runtime = createComputerRuntime({
    provider,
    stateStore,
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
    secrets: vault,
    logger,
    onEvent: (e) => events.push(e),
  });
  const run = runtime.startRun({ workspaceId, botId: "pi" });
  const machine = await run.machine();
  const reversed = password.split("").reverse().join("");
  for (const site of [port, port + 1]) {
    await machine.files.write(`${run.workdir}/site-${site}/index.html`, new TextEncoder().encode(loginPage(reversed)));
    await servePage(machine, run.workdir, `site-${site}`, site);
  }

  const faux = registerFauxProvider({ models: [{ id: "scripted-text", input: ["text"] }] });
  const seen: { text: string; isError: boolean }[] = [];
  const read = (context: Context) => {
    const result = lastToolResult(context);
    seen.push(result);
    return result;
  };
  faux.setResponses([
    () => fauxAssistantMessage(fauxToolCall("browser_navigate", { url: `http://127.0.0.1:${port}/` })),
    (context) => {
      const ref = refOf(read(context).text, /(e\d+) textbox "?Username/);
      return fauxAssistantMessage(fauxToolCall("browser_act", { ref, action: "fill", value: "alice" }));
    },
    (context) => {
      const ref = refOf(read(context).text, /(e\d+) textbox "?Password/);
      return fauxAssistantMessage(fauxToolCall("browser_act", { ref, action: "fill", secret: "site-login" }));
    },
    (context) => {
      const ref = refOf(read(context).text, /(e\d+) button "?Sign in/);
      return fauxAssistantMessage(fauxToolCall("browser_act", { ref, action: "click" }));
    },
    (context) => {
      read(context);
      return fauxAssistantMessage(fauxToolCall("browser_navigate", { url: `http://127.0.0.1:${port + 1}/` }));
    },
    (context) => {
      const ref = refOf(read(context).text, /(e\d+) textbox "?Password/);
      return fauxAssistantMessage(fauxToolCall("browser_act", { ref, action: "fill", secret: "site-login" }));
    },
    (context) => {
      read(context);
      return fauxAssistantMessage(fauxText("Signed in on the first site; the second refused the secret."));
    },
  ]);
  const activity: ActivityEvent[] = [];
  try {
    const agent = createComputerAgent({
      run,
      capabilities: runtime.capabilities,
      model: faux.getModel(),
      onActivity: (e) => activity.push(e),
    });
    await agent.prompt("Sign in to the site at http://127.0.0.1 with the stored login, then try the other one.");
    const home = Buffer.concat(await streamChunks(await machine.files.exportWorkspace()));
    const scan = async () =>
      new TextDecoder()
        .decode(
          (
            await machine.exec({
              argv: ["python3", "-c", PROCESS_MEMORY_SCAN],
              stdin: new TextEncoder().encode(password),
            })
          ).stdout,
        )
        .trim();
    const proc = realMachine ? await scan() : "";
    // The control: a process of the bot that does hold the password is found by the same scan.
    const control = realMachine ? await scanWithHolder(machine, password, scan) : "";
    return {
      password,
      seen,
      activity,
      transcript: JSON.stringify(agent.state.messages),
      pending: faux.getPendingResponseCount(),
      home,
      proc,
      control,
      events,
      logLines,
    };
  } finally {
    faux.unregister();
    await endAndRemove(runtime, run, provider);
  }
}

/**
 * The desktop batch's `type_secret` on the computer's real Chromium, through
 * the runtime's desktop (no model): into the focused password field on the
 * secret's origin; refused on another origin and for a field that is not a
 * password field.
 */
async function typeFromDesktop(provider: SandboxProvider, dataDir: string) {
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const port = 8980 + Math.floor(Math.random() * 10) * 2;
  const workspaceId = `desk-${Date.now().toString(36)}`;
  const stateStore = new MemoryStateStore();
  const vault = new SecretVault({ store: stateStore, keyring: new ContentKeyring(randomBytes(32)) });
  await vault.set({ workspaceId, name: "site-login", value: password, origins: [`http://127.0.0.1:${port}`] });
  const runtime = createComputerRuntime({
    provider,
    stateStore,
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId, botId: "desk" });
  try {
    const machine = await run.machine();
    const reversed = password.split("").reverse().join("");
    for (const site of [port, port + 1]) {
      await machine.files.write(
        `${run.workdir}/site-${site}/index.html`,
        new TextEncoder().encode(loginPage(reversed)),
      );
      await servePage(machine, run.workdir, `site-${site}`, site);
    }
    const desktop = await run.desktop();
    const page = desktop.pageBrowser;
    if (!page) throw new Error("the Docker desktop has a page browser");
    const secrets = [await vault.resolve({ workspaceId, botId: "desk", name: "site-login" })];
    const typeSecret = () => desktop.act([{ type: "type_secret", secret: "site-login" }], undefined, { secrets });
    const focus = async (url: string, field: string) => {
      const shown = await page.navigate(url);
      const ref = shown.elements.find((e) => e.name === field)?.ref as string;
      await page.act({ ref, action: "click" });
      return shown;
    };
    const onUser = await focus(`http://127.0.0.1:${port}/`, "Username");
    const notPassword = await typeSecret();
    await focus(`http://127.0.0.1:${port + 1}/`, "Password");
    const otherOrigin = await typeSecret();
    const shown = await focus(`http://127.0.0.1:${port}/`, "Password");
    const typed = await typeSecret();
    const signIn = shown.elements.find((e) => e.name === "Sign in")?.ref as string;
    const after = await page.act({ ref: signIn, action: "click" });
    return { password, onUser, notPassword, otherOrigin, typed, after };
  } finally {
    await endAndRemove(runtime, run, provider);
  }
}

async function scanWithHolder(machine: Machine, password: string, scan: () => Promise<string>): Promise<string> {
  const held = await machine.exec({
    shell: `umask 077; cat > .holder-input; (python3 -c 'import sys, time; s = open(".holder-input").read(); time.sleep(60)' >/dev/null 2>&1 &)
sleep 1; rm -f .holder-input`,
    stdin: new TextEncoder().encode(password),
  });
  expect(held.exitCode).toBe(0);
  try {
    return await scan();
  } finally {
    await machine.exec({ shell: "pkill -f 'holder-input' || true" });
  }
}

async function streamChunks(stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return chunks;
}

function expectSignedInWithoutLeaks(result: Awaited<ReturnType<typeof signIn>>) {
  expect(result.pending).toBe(0);
  // The first site received the right password through the page tools.
  expect(result.seen[3]?.text).toContain("Signed in as alice");
  expect(result.seen[2]?.text).toContain("typed the secret site-login");
  // The second origin: refused, typed nothing, and the model is told so by name.
  expect(result.seen[5]).toMatchObject({ isError: true });
  expect(result.seen[5]?.text).toMatch(/PERMISSION_DENIED/);
  expect(result.seen[5]?.text).toContain("Nothing was typed");
  expect(result.activity.map((e) => [e.tool, e.ok])).toEqual([
    ["browser_navigate", true],
    ["browser_act", true],
    ["browser_act", true],
    ["browser_act", true],
    ["browser_navigate", true],
    ["browser_act", false],
  ]);
  expect(result.activity[2]?.summary).toBe(
    `fill ${/e\d+/.exec(result.activity[2]?.summary ?? "")?.[0]} (the secret site-login)`,
  );
  const places = {
    transcript: result.transcript,
    "tool results": JSON.stringify(result.seen),
    activity: JSON.stringify(result.activity),
    events: JSON.stringify(result.events),
    logs: result.logLines.join("\n"),
    home: result.home.toString("latin1"),
  };
  for (const [where, text] of Object.entries(places)) expect(text.includes(result.password), where).toBe(false);
  expect(result.logLines.length, "the runtime logged its work").toBeGreaterThan(0);
  expect(result.home.length, "the home was exported").toBeGreaterThan(1024);
}

describe("logins by reference on the fake provider", () => {
  it("signs in with a vault password it never sees, and is refused on another origin", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "pi-secret-"));
    expectSignedInWithoutLeaks(await signIn(createFakeProvider(), dataDir, false));
  }, 60_000);
});

const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "logins by reference on Docker",
);
if (!env.missing) {
  describe("logins by reference on Docker", () => {
    it("signs in through the computer's real Chromium; no process of the bot holds the password", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "pi-secret-docker-"));
      const result = await signIn(dockerProvider({ docker: env.docker, image: env.image, dataDir }), dataDir, true);
      expectSignedInWithoutLeaks(result);
      const [scanned, holding] = result.proc.split(" ").map(Number);
      expect(scanned, "the scan read the bot's processes").toBeGreaterThan(0);
      expect(holding, "processes of the bot holding the password").toBe(0);
      expect(Number(result.control.split(" ")[1]), "the scan finds a process that does hold it").toBeGreaterThan(0);
    }, 240_000);

    it("types a vault password from the desktop batch into the focused password field, on its origin only", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "desk-secret-docker-"));
      const r = await typeFromDesktop(dockerProvider({ docker: env.docker, image: env.image, dataDir }), dataDir);
      expect(r.notPassword.results[0]).toMatchObject({ status: "failed", error: { code: "CONFLICT" } });
      expect(r.otherOrigin.results[0]).toMatchObject({ status: "failed", error: { code: "PERMISSION_DENIED" } });
      expect(r.typed).toMatchObject({ ok: true, results: [{ status: "done" }] });
      expect(r.after.snapshot?.text).toContain("Signed in as");
      expect(JSON.stringify([r.onUser, r.notPassword, r.otherOrigin, r.typed, r.after])).not.toContain(r.password);
    }, 240_000);
  });
}
