// `desktop open` and `desktop launch` (issue 46): files and programs on a
// display that runs apart from the bot's processes (docs/architecture.md
// §4). Nothing the bot wrote runs here: a file opens in the bot's own
// browser, which shows it and runs none of it beside the display, and a
// program starts only when the image installed it as a desktop
// application, with the display's own configuration (HOME is the display
// container's, never the workspace).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { extname, isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import { CdpConnection, cdpJson } from "./cdp-connection.js";
import { CliError } from "./cli-error.js";
import { displayOf } from "./desktop-lifecycle.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";

/** What the browser shows rather than downloads, by extension (a folder shows as a listing). */
const BROWSER_SHOWS = new Set([
  ".pdf",
  ".html",
  ".htm",
  ".txt",
  ".json",
  ".xml",
  ".svg",
  ".png",
  ".jpg",
  ".jpeg",
  ".gif",
  ".webp",
  ".bmp",
  ".mp4",
  ".webm",
  ".mp3",
  ".wav",
]);
/** Where the image's desktop applications are declared. */
const APPLICATIONS_DIR = "/usr/share/applications";
/** Where a program's name is looked up: the image's folders, never the home. */
const SYSTEM_PATH = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"];
/** Desktop entries of the display stack itself: a second one would serve or manage the bot's display. */
const DISPLAY_STACK = new Set(["x11vnc", "openbox", "Xvfb"]);

/**
 * Opens `path` (absolute, the host resolved it inside the home) in a new
 * tab of the bot's browser. A type the browser would download instead of
 * show is refused, so opening a file never copies it into the downloads.
 */
export async function openInBrowser(record: DisplaySlotRecord, path: string): Promise<{ url: string }> {
  if (!isAbsolute(path) || path.includes("\0")) throw new CliError("INVALID_ARGUMENT", "--path must be absolute.");
  let folder: boolean;
  try {
    folder = statSync(path).isDirectory();
  } catch {
    throw new CliError("NOT_FOUND", `${path} does not exist.`);
  }
  const kind = extname(path).toLowerCase();
  if (!folder && !BROWSER_SHOWS.has(kind)) {
    throw new CliError(
      "UNSUPPORTED",
      `This desktop opens files in the browser, which does not show ${kind || "extensionless"} files; read it with the file tools or a program in the shell.`,
    );
  }
  const url = pathToFileURL(path).href;
  const version = await cdpJson<{ webSocketDebuggerUrl?: string }>(record, "/json/version").catch(() => {
    throw new CliError("UNAVAILABLE", `The browser of ${record.bot} does not answer; is its desktop quiesced?`);
  });
  if (!version.webSocketDebuggerUrl) throw new CliError("UNAVAILABLE", `The browser of ${record.bot} does not answer.`);
  const cdp = await CdpConnection.open(version.webSocketDebuggerUrl, record);
  try {
    await cdp.call("Target.createTarget", { url });
  } finally {
    cdp.close();
  }
  return { url };
}

/**
 * Starts `argv` detached on the bot's display when its program is a desktop
 * application of the image (a `.desktop` entry in /usr/share/applications
 * that does not run in a terminal), looked up in the image's folders only.
 */
export function launchApplication(record: DisplaySlotRecord, argv: unknown): { program: string } {
  if (!Array.isArray(argv) || argv.length === 0 || argv.length > 64 || !argv.every(isArgument)) {
    throw new CliError("INVALID_ARGUMENT", "launch reads a JSON array of 1 to 64 strings on stdin.");
  }
  const [name, ...args] = argv as string[];
  const program = programPath(name as string);
  if (!program || !applicationPrograms().has(program)) {
    throw new CliError(
      "UNSUPPORTED",
      `${name} is not a desktop application of this computer's image, so it is not started beside its display; programs of the workspace run in the computer's shell.`,
    );
  }
  const child = spawn(program, args, {
    detached: true,
    stdio: "ignore",
    cwd: process.env.HOME ?? "/",
    env: { ...process.env, DISPLAY: displayOf(record.slot) },
  });
  child.on("error", () => {});
  child.unref();
  return { program };
}

const isArgument = (value: unknown): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= 8192 && !value.includes("\0");

/** The real path of a program named bare or by an absolute path in the image's folders; undefined otherwise. */
function programPath(name: string): string | undefined {
  const candidates = isAbsolute(name) ? [name] : name.includes("/") ? [] : SYSTEM_PATH.map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      const real = realpathSync(candidate);
      if (statSync(real).isFile() && SYSTEM_PATH.some((dir) => candidate.startsWith(`${dir}/`))) return real;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}

/** The real paths of the programs the image's desktop entries start (outside a terminal), read at each call. */
function applicationPrograms(): Set<string> {
  const programs = new Set<string>();
  let entries: string[] = [];
  try {
    entries = readdirSync(APPLICATIONS_DIR).filter((name) => name.endsWith(".desktop"));
  } catch {
    return programs;
  }
  for (const entry of entries) {
    const fields = desktopEntryFields(readFileSync(join(APPLICATIONS_DIR, entry), "utf8"));
    const exec = fields.get("Exec")?.trim().split(/\s+/)[0]?.replace(/^"|"$/g, "");
    if (!exec || fields.get("Terminal") === "true" || fields.get("Type") !== "Application") continue;
    const program = programPath(exec);
    if (program && !DISPLAY_STACK.has(exec.split("/").at(-1) as string)) programs.add(program);
  }
  return programs;
}

/** The keys of a desktop entry's `[Desktop Entry]` group (not its actions or translations). */
function desktopEntryFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  let inEntry = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("[")) inEntry = line.trim() === "[Desktop Entry]";
    const match = inEntry ? /^([A-Za-z]+)=(.*)$/.exec(line) : null;
    if (match && !fields.has(match[1] as string)) fields.set(match[1] as string, match[2] as string);
  }
  return fields;
}
