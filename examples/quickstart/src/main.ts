// The quickstart: a Team computer for two bots, driven through the same
// tools a model calls (shell, files, desktop, page browser where offered),
// a checkpoint at the end of their runs, the machine lost and replaced with
// the home restored, and finally the home moved to a computer on a new key.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import {
  type BotRun,
  ComputerToolSession,
  callTool,
  computerTools,
  createComputerRuntime,
  type ToolResult,
  textOf,
} from "@agent-computer/runtime";
import { chooseProvider } from "./choose-provider.js";
import { moveHome } from "./move-home.js";
import { note, reportHeader, stage } from "./stage.js";

const outDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "out");

/** The tools of one bot, called by name as a model would. */
function toolsOf(run: BotRun, capabilities: ComputerToolSession["capabilities"]) {
  const session = new ComputerToolSession({
    run,
    capabilities,
    vision: true,
    onActivity: (e) => note(`activity ${e.botId} ${e.tool}: ${e.summary}${e.ok ? "" : " (failed)"}`),
  });
  const tools = computerTools(session);
  return {
    names: tools.map((t) => t.name),
    async call(name: string, input: unknown): Promise<ToolResult> {
      const tool = tools.find((t) => t.name === name);
      if (!tool) throw new Error(`${name} is not offered here`);
      const result = await callTool(tool, input, session);
      if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`);
      return result;
    },
  };
}

/** A shell line that waits until something listens on 127.0.0.1:`port`, at most 15 s (exit 1 then). */
function untilListening(port: number): string {
  const wait = [
    "import socket, sys, time",
    "for _ in range(150):",
    "    try:",
    `        socket.create_connection(("127.0.0.1", ${port}), 1).close(); sys.exit(0)`,
    "    except OSError:",
    "        time.sleep(0.1)",
    "sys.exit(1)",
  ].join("\n");
  return `python3 -c '${wait}'`;
}

async function saveScreenshot(result: ToolResult, file: string): Promise<string> {
  const image = result.content.find((c) => c.type === "image");
  if (image?.type !== "image") return "no new frame";
  await writeFile(join(outDir, file), image.data);
  return `saved out/${file}`;
}

async function main(): Promise<void> {
  await mkdir(outDir, { recursive: true });
  reportHeader();
  const dataDir = join(outDir, "quickstart-data");
  const provider = await stage("choose the provider (and build the computer image where it is missing)", () =>
    chooseProvider(dataDir),
  );
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
    onEvent: (e) => note(`event ${e.type}, took ${e.durationMs} ms: ${JSON.stringify(e.detail)}`),
  });
  const workspaceId = `quickstart-${Date.now().toString(36)}`;

  const alpha = runtime.startRun({ workspaceId, botId: "alpha" });
  const beta = runtime.startRun({ workspaceId, botId: "beta" });
  const a = toolsOf(alpha, runtime.capabilities);
  const b = toolsOf(beta, runtime.capabilities);
  note(`tools offered: ${a.names.join(", ")}`);

  note(
    textOf(
      await stage("alpha: shell (starts the Team computer)", () => a.call("shell", { command: "uname -sm; pwd" })),
    ),
  );
  await stage("alpha: write_file notes.txt", () =>
    a.call("write_file", { path: "notes.txt", content: `alpha's notes, ${new Date().toISOString()}` }),
  );
  await stage("beta: write_file ../../shared/plan.md", () =>
    b.call("write_file", { path: "../../shared/plan.md", content: "# Plan\n- export contacts\n" }),
  );
  note(textOf(await stage("beta: list_files ../../shared", () => b.call("list_files", { path: "../../shared" }))));

  if (a.names.includes("computer_act")) {
    for (const [name, bot] of [
      ["alpha", a],
      ["beta", b],
    ] as const) {
      const acted = await stage(`${name}: computer_act (click, type) and the screen after`, () =>
        bot.call("computer_act", {
          actions: [
            { type: "click", x: 200, y: 150 },
            { type: "type", text: `hello from ${name}` },
          ],
        }),
      );
      note(`${textOf(acted).split("\n").at(-1)} ${await saveScreenshot(acted, `quickstart-${name}.png`)}`);
    }
  } else {
    note("this provider has no desktop; no screenshots");
  }

  if (b.names.includes("browser_navigate")) {
    // Away from the ports the web console's bots use (8801, 8802).
    const port = 18_700 + Math.floor(Math.random() * 200);
    await stage("beta: write_file site/index.html", () =>
      b.call("write_file", {
        path: "site/index.html",
        content: `<title>Contacts</title><h1>Contacts</h1><button onclick="this.textContent='Exported 3 contacts'">Export</button>`,
      }),
    );
    await stage("beta: shell serves it inside the computer", () =>
      b.call("shell", {
        // Waits until the server answers (a second was not enough on a busy machine), at most 15 s.
        command: `(python3 -m http.server ${port} --bind 127.0.0.1 --directory site >/dev/null 2>&1 &) && ${untilListening(port)}`,
      }),
    );
    const page = textOf(
      await stage("beta: browser_navigate (a text snapshot, no screenshot)", () =>
        b.call("browser_navigate", { url: `http://127.0.0.1:${port}/` }),
      ),
    );
    note(
      page
        .split("\n")
        .map((line) => `| ${line}`)
        .join("\n"),
    );
    const ref = /(e\d+) button (?:"Export"|Export\])/.exec(page)?.[1];
    if (ref) {
      const clicked = textOf(
        await stage(`beta: browser_act click ${ref}`, () => b.call("browser_act", { ref, action: "click" })),
      );
      note(
        `${clicked.split("\n")[0]} ${/Exported 3 contacts/.test(clicked) ? "(the page now says: Exported 3 contacts)" : ""}`,
      );
    }
  }

  await stage("alpha ends its run (deferred: beta still works)", () => alpha.end("completed"));
  await stage("beta ends its run (the last one saves)", () => beta.end("completed"));

  const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
  const record = await runtime.leases.getComputer(computerId);
  await stage("lose the machine (destroyed behind the runtime's back)", async () => {
    const machine = (await provider.reconnect(record!.providerRef as `${string}:${string}`)) as Machine;
    await machine.destroy();
  });
  const again = runtime.startRun({ workspaceId, botId: "alpha" });
  const restored = await stage("alpha: read_file notes.txt (replacement + restore first)", () =>
    toolsOf(again, runtime.capabilities).call("read_file", { path: "notes.txt" }),
  );
  await again.end("completed");
  note(`revision ${(await runtime.leases.getComputer(computerId))?.revision}, restored: ${textOf(restored)}`);

  const moved = await moveHome(provider, runtime, computerId);
  console.log(`\nRestored file content: ${moved}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
