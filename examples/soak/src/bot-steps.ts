import type { BotTools } from "./bot-tools.js";
import type { ExpectedHome } from "./expected-home.js";
import type { PageSite } from "./page-site.js";
import type { Person } from "./person.js";
import type { SeededRandom } from "./seeded-random.js";
import { StepFailure } from "./step-failure.js";
import type { StepKind } from "./step-kind.js";

/** What one step of one bot works with. */
export interface StepContext {
  readonly botId: string;
  /** This bot's step number, from 1. */
  readonly n: number;
  readonly tools: BotTools;
  readonly random: SeededRandom;
  readonly person: Person;
  readonly site: PageSite;
  readonly expected: ExpectedHome;
  /** Aborted when the step runs out of time. */
  readonly signal: AbortSignal;
}

function mismatch(op: string, what: string, text: string): StepFailure {
  return new StepFailure(op, "MISMATCH", `${what}; got: ${text.slice(0, 300)}`);
}

/** Text of about `bytes` bytes that names its writer, so a wrong restore shows whose file it is. */
function contentOf(ctx: StepContext, bytes: number): string {
  const line = `${ctx.botId} step ${ctx.n} ${ctx.random.hex(8)}\n`;
  return line.repeat(Math.max(1, Math.round(bytes / line.length)));
}

/** A short command: one writes a file the restore check compares later; the others only read. */
async function shell(ctx: StepContext): Promise<void> {
  const variant = ctx.random.int(0, 2);
  if (variant === 0) {
    const token = `${ctx.botId}-${ctx.n}-${ctx.random.hex(4)}`;
    const path = `soak/shell-${ctx.random.int(0, 3)}.txt`;
    const { text } = await ctx.tools.call(
      "shell",
      { command: `mkdir -p soak && printf '%s' ${token} > ${path} && cat ${path}` },
      ctx.signal,
    );
    if (!text.startsWith("exit code 0") || !text.includes(token)) throw mismatch("shell", `expected ${token}`, text);
    ctx.expected.set(ctx.tools.session.homePath(path), token);
    return;
  }
  const command = variant === 1 ? "ls -1 soak 2>/dev/null | wc -l" : "cat /proc/loadavg";
  const { text } = await ctx.tools.call("shell", { command }, ctx.signal);
  if (!text.startsWith("exit code 0")) throw new StepFailure("shell", "EXIT_NONZERO", text.slice(0, 300));
}

/** write_file then read_file of the same path (a quarter in ../../shared), sometimes list_files. */
async function file(ctx: StepContext): Promise<void> {
  const k = ctx.random.int(0, 7);
  const shared = ctx.random.next() < 0.25;
  const path = shared ? `../../shared/soak-${ctx.botId}-${k % 4}.txt` : `soak/file-${k}.txt`;
  const content = contentOf(ctx, ctx.random.pick([64, 1024, 16 * 1024]));
  await ctx.tools.call("write_file", { path, content }, ctx.signal);
  ctx.expected.set(ctx.tools.session.homePath(path), content);
  const { text } = await ctx.tools.call("read_file", { path }, ctx.signal);
  if (text !== content) throw mismatch("read_file", `${path} does not read back as written`, text);
  if (!shared && ctx.random.next() < 0.3) {
    const listed = await ctx.tools.call("list_files", { path: "soak" }, ctx.signal);
    if (!listed.text.includes(`file-${k}.txt`)) throw mismatch("list_files", `soak/ lacks file-${k}.txt`, listed.text);
  }
}

async function observe(ctx: StepContext): Promise<void> {
  const { text } = await ctx.tools.call("computer_observe", {}, ctx.signal);
  if (!text.startsWith("Screen ")) throw mismatch("computer_observe", "expected the screen's size", text);
}

/** A batch of mouse and keyboard actions with waits, inside the page area of the screen. */
async function act(ctx: StepContext): Promise<void> {
  const x = ctx.random.int(100, 600);
  const y = ctx.random.int(200, 390);
  await ctx.tools.call(
    "computer_act",
    {
      actions: [
        { type: "move", x, y },
        { type: "click", x, y },
        { type: "type", text: `soak ${ctx.n}` },
        { type: "wait", ms: 50 },
        { type: "key", keys: "BackSpace" },
        { type: "wait", ms: 50 },
      ],
    },
    ctx.signal,
  );
}

/** Navigate to the soak page, sometimes fill its field, click its button, snapshot the result. */
async function page(ctx: StepContext): Promise<void> {
  const url = `${ctx.site.url}?bot=${ctx.botId}&step=${ctx.n}`;
  let { text } = await ctx.tools.call("browser_navigate", { url }, ctx.signal);
  if (!text.includes("Soak page")) throw mismatch("browser_navigate", "expected the soak page", text);
  if (ctx.random.next() < 0.5) {
    const field = /(e\d+) textbox (?:"Name"|Name\])/.exec(text)?.[1];
    if (!field) throw mismatch("browser_navigate", 'expected the textbox "Name"', text);
    ({ text } = await ctx.tools.call(
      "browser_act",
      { ref: field, action: "fill", value: `${ctx.botId} ${ctx.n}` },
      ctx.signal,
    ));
  }
  const button = /(e\d+) button (?:"Count"|Count\])/.exec(text)?.[1];
  if (!button) throw mismatch("browser_act", 'expected the button "Count"', text);
  const clicked = await ctx.tools.call("browser_act", { ref: button, action: "click" }, ctx.signal);
  if (!clicked.text.includes("Clicked 1 times"))
    throw mismatch("browser_act", "expected Clicked 1 times", clicked.text);
  const snapshot = await ctx.tools.call("browser_snapshot", {}, ctx.signal);
  if (!snapshot.text.includes("Clicked 1 times"))
    throw mismatch("browser_snapshot", "expected Clicked 1 times", snapshot.text);
}

async function screen(ctx: StepContext): Promise<void> {
  await ctx.person.viewScreen(ctx.botId);
}

/** request_takeover, answered by the person: the call returns once they released the screen. */
async function takeover(ctx: StepContext): Promise<void> {
  const answer = ctx.person.expectTakeover(ctx.botId);
  try {
    await ctx.tools.call(
      "request_takeover",
      { reason: `Soak step ${ctx.n}: please look at my screen, then release it.` },
      AbortSignal.any([ctx.signal, answer.signal]),
    );
  } catch (error) {
    // The person's own failure says more than the ABORTED it caused.
    throw (answer.signal.aborted ? await answer.done : undefined) ?? error;
  }
  const failure = await answer.done;
  if (failure) throw failure;
}

export const STEPS: Readonly<Record<StepKind, (ctx: StepContext) => Promise<void>>> = {
  shell,
  file,
  observe,
  act,
  page,
  screen,
  takeover,
};
