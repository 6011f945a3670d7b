import type { Machine, Observation } from "@agent-computer/core";
import { AgentComputerError, desktopActionBatchSchema } from "@agent-computer/core";
import { z } from "zod";
import { browserTools } from "./browser-tools.js";
import type { ComputerToolSession } from "./computer-tool-session.js";
import { frameForModel, runComputerUseBatch } from "./computer-use-batch.js";
import { type ComputerTool, computerTool, recorded, textResult } from "./recorded-call.js";
import type { ToolContent } from "./tool-result.js";

const OUTPUT_TAIL_BYTES = 8 * 1024;
const READ_DEFAULT_BYTES = 256 * 1024;
const ATTACH_MAX_BYTES = 10 * 1024 * 1024;
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Frame metadata, and the image only when it differs from the last one the model saw. */
const frameContent = (session: ComputerToolSession, frame: Observation): ToolContent[] => frameForModel(session, frame);

const shell = computerTool({
  name: "shell",
  description:
    "Run a shell command (sh -c) on your computer, starting in your own folder (on a Team computer bots/<your-id>/, shared work in ../../shared/; on a Private computer the whole home). Returns the exit code and the end of stdout and stderr. Use it for files, git, scripts and command-line programs. Long-running servers: start them in the background.",
  inputSchema: z.object({
    command: z.string().min(1).max(100_000).describe("The command line to run with sh -c."),
    timeoutSeconds: z.number().int().min(1).max(900).default(120).describe("Kill it after this long (default 120)."),
  }),
  mutating: true,
  handler: (input, session, signal) =>
    recorded(session, "shell", input.command, async () => {
      const machine = await session.run.machine();
      const result = await machine.exec(
        {
          shell: input.command,
          cwd: session.run.workdir,
          timeoutMs: input.timeoutSeconds * 1000,
          maxOutputBytes: 1024 * 1024,
        },
        signal ? { signal } : {},
      );
      const stdout = decode(result.stdout.slice(-OUTPUT_TAIL_BYTES));
      const stderr = decode(result.stderr.slice(-OUTPUT_TAIL_BYTES));
      const status = result.timedOut
        ? `timed out after ${input.timeoutSeconds}s and was killed`
        : `exit code ${result.exitCode}`;
      const cut =
        result.stdout.length > OUTPUT_TAIL_BYTES || result.stderr.length > OUTPUT_TAIL_BYTES || result.truncated;
      const body = [
        `${status}${cut ? " (output shortened to its end)" : ""}`,
        stdout ? `stdout:\n${stdout}` : "stdout: (empty)",
        stderr ? `stderr:\n${stderr}` : "",
      ].filter(Boolean);
      const ok = result.exitCode === 0;
      const text = textResult(body.join("\n"));
      if (ok || !session.failedCommandIsError) return { result: text, outputTail: `${stdout}${stderr}`, ok };
      const error = result.timedOut
        ? { code: "TIMEOUT" as const, message: `The command ${status}.`, retryable: true }
        : { code: "COMMAND_FAILED" as const, message: `The command exited with ${status}.`, retryable: false };
      return { result: { ...text, isError: true, error }, outputTail: `${stdout}${stderr}`, ok };
    }),
});

/** The most entries list_files shows: a folder of a million files is not listed whole. */
const LIST_LIMIT = 500;

const readFile = computerTool({
  name: "read_file",
  description:
    "Read a text file from your computer. Paths are relative to your own folder (bots/<your-id>/ on a Team computer, the home on a Private one). Large files are cut at maxBytes; binary files are described, not dumped.",
  inputSchema: z.object({
    path: z.string().min(1),
    maxBytes: z
      .number()
      .int()
      .min(1)
      .max(4 * 1024 * 1024)
      .default(READ_DEFAULT_BYTES),
  }),
  mutating: false,
  async handler(input, session) {
    const machine = await session.run.machine();
    const path = session.homePath(input.path);
    // Only what is shown is read (one byte more tells whether the file goes
    // on): a file's listed size may be gigabytes, a sparse file or a log.
    const start = await machine.files.read(path, undefined, { length: input.maxBytes + 1 });
    const shown = start.subarray(0, input.maxBytes);
    const cut = start.length > input.maxBytes;
    if (shown.includes(0))
      return textResult(`${input.path} is a binary file${cut ? "" : ` of ${start.length} bytes`}.`);
    const more = cut
      ? `\n[... the file goes on past ${input.maxBytes} bytes; read more with a larger maxBytes, or search it with the shell]`
      : "";
    return textResult(`${decode(shown)}${more}`);
  },
});

const writeFile = computerTool({
  name: "write_file",
  description:
    "Create or replace a text file on your computer (parent folders are made). Paths are relative to your own folder (bots/<your-id>/ on a Team computer, the home on a Private one).",
  inputSchema: z.object({ path: z.string().min(1), content: z.string().max(20 * 1024 * 1024) }),
  mutating: true,
  handler: (input, session) => {
    const bytes = new TextEncoder().encode(input.content);
    return recorded(session, "write_file", `wrote ${input.path} (${bytes.length} bytes)`, async () => {
      const machine = await session.run.machine();
      await machine.files.write(session.homePath(input.path), bytes);
      return { result: textResult(`Wrote ${bytes.length} bytes to ${input.path}.`) };
    });
  },
});

const listFiles = computerTool({
  name: "list_files",
  description:
    'List a folder on your computer ("." is your own folder: bots/<your-id>/ on a Team computer, the home on a Private one). Shows names, kinds and sizes.',
  inputSchema: z.object({ path: z.string().default(".") }),
  mutating: false,
  async handler(input, session) {
    const machine = await session.run.machine();
    const entries = await machine.files.list(session.homePath(input.path), undefined, { limit: LIST_LIMIT + 1 });
    if (entries.length === 0) return textResult(`${input.path} is empty.`);
    const lines = entries
      .slice(0, LIST_LIMIT)
      .map((e) => (e.type === "directory" ? `${e.name}/` : `${e.name}  (${e.type}, ${e.size} bytes)`));
    if (entries.length > LIST_LIMIT)
      lines.push(`[more than ${LIST_LIMIT} entries; list a subfolder, or use the shell (ls, find) to filter]`);
    return textResult(lines.join("\n"));
  },
});

const MIME_TYPES: Record<string, string> = {
  csv: "text/csv",
  txt: "text/plain",
  md: "text/markdown",
  json: "application/json",
  pdf: "application/pdf",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  html: "text/html",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  zip: "application/zip",
};

const attachFile = computerTool({
  name: "attach_file",
  description: `Hand a file from your computer to the conversation as an attachment, for the person you work for to see or download (at most ${ATTACH_MAX_BYTES / 1024 / 1024} MB). Paths are relative to your folder.`,
  inputSchema: z.object({ path: z.string().min(1) }),
  mutating: false,
  // It changes nothing, but a file leaving the computer belongs in the
  // activity feed beside write_file (docs/architecture.md §10).
  handler: (input, session) =>
    recorded(session, "attach_file", `attach ${input.path}`, async () => {
      const machine = await session.run.machine();
      const data = await machine.files.read(session.homePath(input.path), undefined, { maxBytes: ATTACH_MAX_BYTES });
      const name = input.path.split("/").at(-1) as string;
      const mimeType = MIME_TYPES[name.split(".").at(-1)?.toLowerCase() ?? ""] ?? "application/octet-stream";
      return {
        summary: `attached ${input.path} (${data.length} bytes)`,
        result: {
          content: [
            { type: "text", text: `Attached ${name} (${data.length} bytes, ${mimeType}).` },
            { type: "file", name, data, mimeType },
          ],
        },
      };
    }),
});

const observe = computerTool({
  name: "computer_observe",
  description:
    "Take a screenshot of your desktop (your own Linux screen with Chromium). Returns the image, its size, the cursor and the active window. If nothing changed since your last screenshot, no image is sent and your last one still holds.",
  inputSchema: z.object({}),
  mutating: false,
  async handler(_input, session) {
    const desktop = await session.desktop();
    return { content: frameContent(session, await desktop.observe()) };
  },
});

const REFUSED_ACT =
  "Refused: you repeated exactly the same action, and last time it changed nothing on the screen. Do something different: use the page tools (browser_snapshot, then browser_act with a ref) for web pages, keyboard navigation, or look again with computer_observe.";

const act = computerTool({
  name: "computer_act",
  description:
    "Act on your desktop with an ordered batch of mouse and keyboard actions (move, click with button and count, drag along a path, scroll, type, type_secret (a stored password or token by name, into the focused field of your browser; you never see its value), key combos like ctrl+l, key_down/key_up, wait, zoom into a region). Batch what you can: one call runs them all and returns the screen after. Stops at the first failing action. Coordinates are screen pixels of your last screenshot. For web pages, prefer the page tools when they are offered: they click elements by ref instead of by pixel.",
  inputSchema: z.object({ actions: desktopActionBatchSchema }),
  mutating: true,
  handler: (input, session) => runComputerUseBatch(session, { actions: input.actions }, undefined, REFUSED_ACT),
});

const openPath = computerTool({
  name: "open_path",
  description:
    "Open a file or folder from your computer in its default desktop application (a PDF viewer, a spreadsheet, the file manager), on your screen. Paths are relative to your folder.",
  inputSchema: z.object({ path: z.string().min(1) }),
  mutating: true,
  handler: (input, session) =>
    recorded(session, "open_path", `open ${input.path}`, async () => {
      const machine = await session.run.machine();
      const path = session.homePath(input.path);
      // NOT_FOUND before any window opens.
      const siblings = await machine.files.list(path.split("/").slice(0, -1).join("/"));
      if (!siblings.some((entry) => entry.path === path)) {
        throw new AgentComputerError("NOT_FOUND", `"${input.path}" does not exist; list_files shows what is there.`);
      }
      const desktop = await session.desktop();
      if (!desktop.open && !desktop.launch)
        throw new AgentComputerError("UNSUPPORTED", "This desktop cannot open files.");
      const real = await resolvedInsideHome(machine, path, input.path);
      await (desktop.open ? desktop.open(real) : desktop.launch?.(["xdg-open", real]));
      return { result: textResult(`Opened ${input.path} on your screen; ${howToSee(session)}.`) };
    }),
});

/**
 * The real path of `path` inside the computer, resolved there (links
 * included) and checked against the home like the file tools check theirs:
 * a link the bot planted to a file outside its home is refused, and the
 * application is given the resolved path, not the link.
 */
async function resolvedInsideHome(machine: Machine, path: string, shown: string): Promise<string> {
  const home = machine.workspacePath;
  const result = await machine.exec({ argv: ["realpath", "-e", "--", `${home}/${path}`] });
  const real = new TextDecoder().decode(result.stdout).trim();
  if (result.exitCode !== 0 || real === "") {
    throw new AgentComputerError("NOT_FOUND", `"${shown}" does not exist; list_files shows what is there.`);
  }
  if (real !== home && !real.startsWith(`${home}/`)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `"${shown}" leads outside your computer's home; only files in it can be opened.`,
      {
        details: { path: shown },
      },
    );
  }
  return real;
}

function launchApp(apps: Readonly<Record<string, readonly string[]>>): ComputerTool {
  const names = Object.keys(apps);
  return computerTool({
    name: "launch_app",
    description: `Start a desktop application on your screen by name. Available: ${names.join(", ")}.`,
    inputSchema: z.object({ name: z.enum(names as [string, ...string[]]) }),
    mutating: true,
    handler: (input, session) =>
      recorded(session, "launch_app", `launch ${input.name}`, async () => {
        const machine = await session.run.machine();
        const desktop = await session.desktop();
        if (!desktop.launch) throw new AgentComputerError("UNSUPPORTED", "This desktop cannot launch applications.");
        const fill = (part: string) =>
          part.replaceAll("{home}", machine.workspacePath).replaceAll("{bot}", session.run.botId);
        await desktop.launch((apps[input.name] as readonly string[]).map(fill));
        return { result: textResult(`Started ${input.name}; ${howToSee(session)}.`) };
      }),
  });
}

/** What a tool that put something on the screen tells the model to do next. */
function howToSee(session: ComputerToolSession): string {
  if (session.vision) return "take a screenshot to see it";
  const ask = "call request_takeover and say what a person should do with it";
  return session.capabilities.pageBrowser
    ? `you cannot see the screen: browser_snapshot reads it if it opened in your browser; otherwise ${ask}`
    : `you cannot see the screen: ${ask}`;
}

const TAKEOVER_DESCRIPTION =
  "Ask a person to take over your screen for something you must not or cannot do yourself: a login, a password, a 2FA code, a CAPTCHA, a payment, or a judgment call. Say exactly what you need. This call waits until the person has finished and released control; then continue where you left off.";

/**
 * A model without vision has no screen tools: where the page tools cannot
 * operate, a person must (docs/architecture.md §10). Its request_takeover
 * says so before it meets such a page; the snapshot or error that shows one
 * says it again (browser-tools.ts).
 */
function takeoverDescription(session: ComputerToolSession): string {
  if (session.vision) return TAKEOVER_DESCRIPTION;
  if (!session.capabilities.pageBrowser)
    return `${TAKEOVER_DESCRIPTION} You cannot see the screen: call this for anything that must be done on it.`;
  return `${TAKEOVER_DESCRIPTION} You cannot see the screen, so also call this whenever the page tools cannot operate: an element browser_snapshot marks for request_takeover, a control the snapshot does not list (a canvas, a drag, a plugin), or a browser_act that keeps failing.`;
}

function requestTakeover(offeredTo: ComputerToolSession): ComputerTool {
  return computerTool({
    name: "request_takeover",
    description: takeoverDescription(offeredTo),
    inputSchema: z.object({
      reason: z.string().min(1).max(2000).describe("What the person should do, in one or two sentences."),
    }),
    mutating: true,
    handler: (input, session, signal) =>
      recorded(session, "request_takeover", `asked a person: ${input.reason}`, async () => {
        await session.run.requestTakeover(input.reason, signal);
        session.lastFrameHash = undefined;
        session.lastAct = undefined;
        const done = "The person has finished and released the screen.";
        if (!session.vision && !session.capabilities.pageBrowser) return { result: textResult(`${done} Continue.`) };
        const look = session.vision ? "Take a screenshot" : "Read the page again (browser_snapshot)";
        return { result: textResult(`${done} ${look} before you continue.`) };
      }),
  });
}

/**
 * The tools one bot gets on its computer, offered only where they can work:
 * desktop tools where the provider has a desktop, screenshot tools only for
 * a model with vision.
 */
export type { ComputerTool };

export function computerTools(session: ComputerToolSession): ComputerTool[] {
  const tools: ComputerTool[] = [shell, readFile, writeFile, listFiles, attachFile];
  if (!session.capabilities.desktop) return tools;
  // While a person controls the screen, tools that would change it are not
  // offered (and would fail FENCED_OUT); looking and asking still are.
  const held = session.run.screenHeldByPerson;
  if (session.vision) tools.push(observe, ...(held ? [] : [act]));
  if (!held) tools.push(openPath, launchApp(session.apps));
  tools.push(requestTakeover(session), ...browserTools(session, { screenHeld: held }));
  return tools;
}
