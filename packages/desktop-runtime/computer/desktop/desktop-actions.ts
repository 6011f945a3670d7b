import { fileURLToPath } from "node:url";
import type { ErrorCode, ResolvedDesktopAction } from "@agent-computer/core";
import { CliError } from "./cli-error.js";
import { displayOf, framebufferOf } from "./desktop-lifecycle.js";
import { pointerAndTitle } from "./desktop-look.js";
import type { DesktopState } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { runProgram } from "./run-program.js";
import { drawCursor, encodePng, readFramebuffer } from "./screen-frame.js";
import { type BatchSecret, typeSecretIntoFocusedTab } from "./secret-typing.js";

/** One line of `desktop act` output, printed as soon as the action ends. */
export interface ActionLine {
  readonly index: number;
  readonly type: string;
  readonly status: "done" | "failed" | "not-run";
  readonly uncertain?: boolean;
  readonly error?: { readonly code: ErrorCode; readonly message: string };
  readonly png?: string;
}

const BUTTONS = { left: 1, middle: 2, right: 3 } as const;
/** Text is typed in pieces so no argument nears the kernel's per-argument limit. */
const TYPE_CHUNK = 2000;
/** Between the clicks of a double or triple click: well inside the usual 400 ms double-click time. */
const MULTI_CLICK_DELAY_MS = 60;

/** Names models commonly send that are not X keysym names. */
const KEY_ALIASES: Record<string, string> = {
  enter: "Return",
  return: "Return",
  esc: "Escape",
  escape: "Escape",
  backspace: "BackSpace",
  del: "Delete",
  delete: "Delete",
  pageup: "Page_Up",
  pagedown: "Page_Down",
  arrowleft: "Left",
  arrowright: "Right",
  arrowup: "Up",
  arrowdown: "Down",
  cmd: "super",
  command: "super",
  win: "super",
  windows: "super",
  control: "ctrl",
  option: "alt",
  tab: "Tab",
  space: "space",
  home: "Home",
  end: "End",
  insert: "Insert",
};

const COMMON_KEYSYM =
  /^(?:[A-Za-z0-9]|F(?:[1-9]|[12][0-9]|3[0-5])|Return|Tab|Escape|BackSpace|Delete|Insert|Home|End|Page_Up|Page_Down|Prior|Next|Left|Right|Up|Down|space|minus|plus|equal|comma|period|slash|backslash|semicolon|apostrophe|grave|bracketleft|bracketright|(?:Shift|Control|Alt|Super|Meta|Hyper)_[LR]|ctrl|alt|shift|super|meta|Caps_Lock|Menu|Print)$/;

/**
 * Runs actions in order on a bot's display, reporting each as it ends;
 * stops at the first failure. A failure found before anything was sent (a
 * point off screen, an unknown key) is certain; one where xdotool started
 * and did not finish may have taken effect, so it is `uncertain`.
 */
export async function runActions(
  state: DesktopState,
  record: DisplaySlotRecord,
  actions: ResolvedDesktopAction[],
  report: (line: ActionLine) => void,
  signal?: AbortSignal,
  secrets: readonly BatchSecret[] = [],
): Promise<boolean> {
  const display = displayOf(record.slot);
  let failed = false;
  for (let index = 0; index < actions.length; ) {
    const action = actions[index] as ResolvedDesktopAction;
    // An aborted call runs nothing more; the action under way is killed (runProgram) and reported uncertain.
    if (failed || signal?.aborted) {
      report({ index, type: action.type, status: "not-run" });
      failed = true;
      index++;
      continue;
    }
    const chain = pointerChain(record, actions, index);
    if (chain.length >= 2) {
      failed = !(await runChain(display, chain, index, actions, report, signal));
      index += chain.length;
      continue;
    }
    try {
      const png =
        action.type === "type_secret"
          ? await typeSecretIntoFocusedTab(record, secretNamed(secrets, action.secret))
          : await runAction(state, record, display, action, signal);
      report({ index, type: action.type, status: "done", ...(png ? { png } : {}) });
    } catch (error) {
      failed = true;
      const e = error instanceof CliError ? error : new CliError("UNAVAILABLE", String(error), true);
      report({
        index,
        type: action.type,
        status: "failed",
        uncertain: e.uncertain,
        error: { code: e.code, message: e.message },
      });
    }
    index++;
  }
  return !failed;
}

/**
 * Consecutive pointer actions from `start` as xdotool commands, checked
 * before anything is sent; it ends at the first action that is not one, or
 * that is refused (that one then runs, and fails, on its own).
 */
function pointerChain(record: DisplaySlotRecord, actions: ResolvedDesktopAction[], start: number): string[][] {
  const chain: string[][] = [];
  for (let i = start; i < actions.length; i++) {
    let args: string[] | undefined;
    try {
      args = pointerCommand(record, actions[i] as ResolvedDesktopAction);
    } catch {
      break;
    }
    if (!args) break;
    chain.push(args);
  }
  return chain;
}

/**
 * Runs a chain of pointer actions as one xdotool (one process, not one per
 * action: a batch costs about what one action does). They end together, so
 * a failure leaves each of them uncertain.
 */
async function runChain(
  display: string,
  chain: string[][],
  start: number,
  actions: ResolvedDesktopAction[],
  report: (line: ActionLine) => void,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const types = chain.map((_, i) => (actions[start + i] as ResolvedDesktopAction).type);
  try {
    await runXdotool(display, chain.flat(), signal, false);
    for (const [i, type] of types.entries()) report({ index: start + i, type, status: "done" });
    return true;
  } catch (error) {
    const e = error instanceof CliError ? error : new CliError("UNAVAILABLE", String(error), true);
    const message = `${e.message} (actions ${start}-${start + chain.length - 1} ran as one xdotool chain: any of them may have taken effect)`;
    for (const [i, type] of types.entries()) {
      report({ index: start + i, type, status: "failed", uncertain: e.uncertain, error: { code: e.code, message } });
    }
    return false;
  }
}

/** The xdotool commands of a pointer action whose target is known without asking X; undefined for any other. */
function pointerCommand(record: DisplaySlotRecord, action: ResolvedDesktopAction): string[] | undefined {
  const onScreen = (x: number, y: number) => {
    if (x >= record.width || y >= record.height) {
      throw new CliError("INVALID_ARGUMENT", `(${x}, ${y}) is outside the ${record.width}x${record.height} screen.`);
    }
    return [String(x), String(y)];
  };
  switch (action.type) {
    case "move":
      return ["mousemove", ...onScreen(action.x, action.y)];
    case "click": {
      // One coordinate alone needs the pointer's position from X first: not chainable.
      if ((action.x === undefined) !== (action.y === undefined)) return undefined;
      const moveTo =
        action.x !== undefined && action.y !== undefined ? ["mousemove", ...onScreen(action.x, action.y)] : [];
      const repeat =
        action.count > 1 ? ["--repeat", String(action.count), "--delay", String(MULTI_CLICK_DELAY_MS)] : [];
      return [...moveTo, "click", ...repeat, String(BUTTONS[action.button])];
    }
    case "mouse_down":
    case "mouse_up":
      return [action.type === "mouse_down" ? "mousedown" : "mouseup", String(BUTTONS[action.button])];
    case "drag": {
      for (const p of action.path) onScreen(p.x, p.y);
      const [first, ...rest] = action.path;
      const steps: string[] = [
        "mousemove",
        String(first?.x),
        String(first?.y),
        "mousedown",
        String(BUTTONS[action.button]),
      ];
      let from = first as { x: number; y: number };
      // Intermediate motion events: applications only start a drag after the pointer moves while pressed.
      for (const to of rest) {
        const n = Math.max(1, Math.ceil(Math.hypot(to.x - from.x, to.y - from.y) / 20));
        for (let i = 1; i <= n; i++) {
          steps.push(
            "mousemove",
            String(Math.round(from.x + ((to.x - from.x) * i) / n)),
            String(Math.round(from.y + ((to.y - from.y) * i) / n)),
            "sleep",
            "0.01",
          );
        }
        from = to;
      }
      steps.push("mouseup", String(BUTTONS[action.button]));
      return steps;
    }
    case "scroll": {
      if (Math.abs(action.dx) > 200 || Math.abs(action.dy) > 200) {
        throw new CliError("INVALID_ARGUMENT", "A scroll moves at most 200 wheel clicks per axis.");
      }
      const moveTo =
        action.x !== undefined && action.y !== undefined ? ["mousemove", ...onScreen(action.x, action.y)] : [];
      const wheel = (count: number, negative: number, positive: number) =>
        count === 0
          ? []
          : ["click", "--repeat", String(Math.abs(count)), "--delay", "10", String(count < 0 ? negative : positive)];
      return [...moveTo, ...wheel(action.dy, 4, 5), ...wheel(action.dx, 6, 7)];
    }
    default:
      return undefined;
  }
}

async function runAction(
  state: DesktopState,
  record: DisplaySlotRecord,
  display: string,
  action: ResolvedDesktopAction,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const xdotool = (args: string[], alreadyStarted = false) => runXdotool(display, args, signal, alreadyStarted);
  if (action.type === "click" && (action.x === undefined) !== (action.y === undefined)) {
    const here = (await pointerAndTitle(display)).cursor;
    await xdotool(pointerCommand(record, { ...action, x: action.x ?? here.x, y: action.y ?? here.y }) as string[]);
    return;
  }
  const pointer = pointerCommand(record, action);
  if (pointer) {
    await xdotool(pointer);
    return;
  }
  switch (action.type) {
    case "type":
      // ASCII goes through xdotool at full speed. Characters outside the
      // keyboard map (é, ß, emoji) need a spare key bound to each, and
      // xdotool's rebinding races the application's keymap refresh (it
      // drops or repeats characters), so a helper binds and waits.
      for (const run of asciiRuns(action.text)) {
        if (!run.ascii) {
          await typeOffKeymap(display, run.chars.join(""), signal);
          continue;
        }
        for (let i = 0; i < run.chars.length; i += TYPE_CHUNK) {
          await xdotool(["type", "--delay", "0", "--", run.chars.slice(i, i + TYPE_CHUNK).join("")], true);
        }
      }
      return;
    case "key": {
      const combos = action.keys.trim().split(/\s+/).map(keyCombo);
      await checkKeysyms(
        combos.flatMap((c) => c.split("+")),
        signal,
      );
      await xdotool(["key", "--delay", "0", ...combos]);
      return;
    }
    case "key_down":
    case "key_up": {
      const key = keyCombo(action.key);
      await checkKeysyms(key.split("+"), signal);
      await xdotool([action.type === "key_down" ? "keydown" : "keyup", key]);
      return;
    }
    case "wait":
      await abortableSleep(action.ms, signal);
      return;
    case "zoom": {
      const frame = readFramebuffer(framebufferOf(state, record.slot), action.region);
      const { cursor } = await pointerAndTitle(display);
      drawCursor(frame, cursor.x - action.region.x, cursor.y - action.region.y);
      return encodePng(frame).toString("base64");
    }
  }
}

function secretNamed(secrets: readonly BatchSecret[], name: string): BatchSecret {
  const secret = secrets.find((s) => s.name === name);
  if (!secret) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `The batch types the secret ${name}, but the host gave no value for it: secrets are resolved by the runtime's vault.`,
    );
  }
  return secret;
}

/** Splits text into runs of ASCII and of other characters (whole code points). */
function asciiRuns(text: string): { ascii: boolean; chars: string[] }[] {
  const runs: { ascii: boolean; chars: string[] }[] = [];
  for (const char of text) {
    const ascii = (char.codePointAt(0) as number) < 0x80;
    const last = runs.at(-1);
    if (last && last.ascii === ascii) last.chars.push(char);
    else runs.push({ ascii, chars: [char] });
  }
  return runs;
}

function keyCombo(combo: string): string {
  return combo
    .split("+")
    .map((k) => {
      if (k === "") throw new CliError("INVALID_ARGUMENT", `"${combo}" has an empty key name.`);
      return KEY_ALIASES[k.toLowerCase()] ?? k;
    })
    .join("+");
}

/** Refuses key names X does not know, before any key is pressed (xdotool would skip them silently). */
async function checkKeysyms(names: string[], signal: AbortSignal | undefined): Promise<void> {
  const unknown = names.filter((n) => !COMMON_KEYSYM.test(n) && [...n].length !== 1);
  if (unknown.length === 0) return;
  const probe = await runProgram(
    "python3",
    [
      "-c",
      'import ctypes,sys\nx=ctypes.CDLL("libX11.so.6")\nx.XStringToKeysym.restype=ctypes.c_ulong\nprint(" ".join(n for n in sys.argv[1:] if x.XStringToKeysym(n.encode())==0))',
      ...unknown,
    ],
    { timeoutMs: 5000, ...(signal ? { signal } : {}) },
  );
  if (probe.status !== 0) throw new CliError("UNAVAILABLE", "Could not check key names (python3 with libX11).");
  const bad = probe.stdout.toString("utf8").trim();
  if (bad) {
    throw new CliError(
      "INVALID_ARGUMENT",
      `Unknown key name(s): ${bad.slice(0, 200)}. Use X keysym names such as Return, Tab, ctrl+l, shift+Left.`,
    );
  }
}

/** The helper that types characters off the keyboard map (see image/runtime/share). */
const TYPE_OFF_KEYMAP = fileURLToPath(new URL("../share/type-unicode.py", import.meta.url));

async function typeOffKeymap(display: string, text: string, signal: AbortSignal | undefined): Promise<void> {
  // Isolated (-I): no user site, so a `.pth` the bot drops in the home never runs here (issue 45).
  const r = await runProgram("python3", ["-I", TYPE_OFF_KEYMAP], {
    env: { DISPLAY: display },
    input: text,
    timeoutMs: 120_000,
    ...(signal ? { signal } : {}),
  });
  if (r.status !== 0) {
    throw new CliError("UNAVAILABLE", `Typing non-ASCII text failed (helper exit ${r.status}).`, true);
  }
}

/** Runs one xdotool; a failure after it started may have sent some events, so it is uncertain. */
async function runXdotool(
  display: string,
  args: string[],
  signal: AbortSignal | undefined,
  alreadyStarted: boolean,
): Promise<void> {
  const r = await runProgram("xdotool", args, {
    env: { DISPLAY: display },
    timeoutMs: 120_000,
    ...(signal ? { signal } : {}),
  });
  if (r.status === 0) return;
  const why = r.error ? r.error.message : r.stderr.trim().split("\n").slice(-2).join(" ");
  throw new CliError(
    "UNAVAILABLE",
    `xdotool ${args[0]} failed: ${why.slice(0, 300)}`,
    r.status !== null || alreadyStarted || r.signal !== null,
  );
}

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
