// The desktop verbs (docs/architecture.md §4): start|stop|list|observe|act,
// quiesce|resume for exports, page and browse for DevTools, screen and
// terminal grants. One code path for both callers: the `desktop` command
// (desktop-main.ts, one process per call) and the resident service
// (desktop-service.ts, many calls over one connection). Each call prints
// JSON lines through `io.write` (act: one per action, then a summary).
import { join } from "node:path";
import { AgentComputerError, desktopActionBatchSchema, isBotId } from "@agent-computer/core";
import { PageSession } from "@agent-computer/page-browser";
import { CdpPageEngine } from "./cdp-page-engine.js";
import { CliError } from "./cli-error.js";
import { integerOption, parseCliOptions } from "./cli-options.js";
import { runActions } from "./desktop-actions.js";
import {
  displayOf,
  quiesceDesktops,
  reconcile,
  resumeDesktops,
  startDesktop,
  stopDesktop,
} from "./desktop-lifecycle.js";
import { look } from "./desktop-look.js";
import { launchApplication, openInBrowser } from "./desktop-open.js";
import { evaluate, navigate, onFirstPage } from "./desktop-page.js";
import { DesktopState, desktopStateDir } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { FileSnapshotMemory } from "./file-snapshot-memory.js";
import { FRAME_FORMATS, type FrameFormat } from "./frame-encoding.js";
import { proxyCredentialsOf } from "./proxy-relay-process.js";
import { runScanBackground } from "./scan-background.js";
import { DEFAULT_TTL_MS, grantScreen, MAX_TTL_MS, MIN_TTL_MS, revokeScreen } from "./screen-verbs.js";
import { secretsOfBatch } from "./secret-typing.js";
import { grantTerminal } from "./terminal-verbs.js";

/** Where a verb reads its input and writes its lines, and how it is cancelled. */
export interface VerbIo {
  /** The call's stdin as text (act batches, browse input, proxy credentials); "" when none came. */
  readonly stdin: () => string;
  readonly write: (line: Record<string, unknown>) => void;
  /** Aborts the call's work in the computer (act stops between actions and kills the one under way). */
  readonly signal?: AbortSignal;
}

/** The verbs that run for as long as the computer: only the `desktop` command starts them. */
export const LONG_LIVED_VERBS = new Set(["gateway", "loopback-proxy", "proxy-relay", "service"]);

export const USAGE =
  "usage: desktop start|stop|observe|act|page|browse|open|launch --bot ID [options] | desktop list|quiesce|resume | desktop loopback-proxy|terminal-host|devtools-bridge|proxy-relay|scan-background [options] | desktop screen grant|revoke | desktop terminal grant|revoke | desktop gateway (see the desktop-runtime README)";

function options(argv: readonly string[]): Map<string, string> {
  return parseCliOptions(argv, USAGE);
}

function int(opts: Map<string, string>, name: string, fallback: number, min: number, max: number): number {
  return integerOption(opts.get(name), `--${name}`, fallback, min, max);
}

function botOf(opts: Map<string, string>): string {
  const bot = opts.get("bot");
  if (!isBotId(bot)) {
    throw new CliError(
      "INVALID_ARGUMENT",
      "--bot must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.",
    );
  }
  return bot;
}

function runningRecord(state: DesktopState, bot: string): DisplaySlotRecord {
  reconcile(state);
  const record = state.recordOf(bot);
  if (!record || (record.status !== "running" && record.status !== "quiesced")) {
    throw new CliError("NOT_FOUND", `${bot} has no running desktop on this computer; start it first.`);
  }
  return record;
}

const publicRecord = (r: DisplaySlotRecord) => ({
  bot: r.bot,
  display: displayOf(r.slot),
  slot: r.slot,
  width: r.width,
  height: r.height,
  status: r.status,
  ...(r.proxyRelayPort ? { proxyRelayPort: r.proxyRelayPort } : {}),
  ...(r.lastError ? { lastError: r.lastError } : {}),
  ...(r.windowMappedAgain ? { windowMappedAgain: r.windowMappedAgain } : {}),
});

/** Runs one verb to its end; a failure is thrown (CliError for a reported one), never printed here. */
export async function runDesktopVerb(argv: readonly string[], io: VerbIo): Promise<void> {
  const [verb, ...rest] = argv;
  const sub = verb === "screen" || verb === "terminal" ? rest.shift() : undefined;
  const opts = options(rest);
  const state = new DesktopState(desktopStateDir());
  const home = opts.get("home") ?? process.env.HOME ?? "/home/computer";
  const print = (value: unknown) => io.write({ ok: true, ...(value as object) });
  if (sub === "revoke") {
    // One revoke for screens and terminals: a capability id names either.
    print(await revokeScreen(state, opts.get("id") ?? ""));
    return;
  }
  switch (verb) {
    case "start": {
      const proxyServer = opts.get("proxy-server");
      if (proxyServer && /@/.test(proxyServer)) {
        throw new CliError("INVALID_ARGUMENT", "--proxy-server must not carry credentials.");
      }
      const record = await startDesktop(state, {
        bot: botOf(opts),
        home,
        width: int(opts, "width", 1280, 64, 7680),
        height: int(opts, "height", 800, 64, 4320),
        // The host always passes --screen-limit; a direct call may take the operator's variable, checked alike.
        screenLimit: integerOption(
          opts.get("screen-limit") ?? process.env.SANDBOX_TEAM_SCREEN_LIMIT,
          "--screen-limit (or SANDBOX_TEAM_SCREEN_LIMIT)",
          0,
          0,
          1000,
        ),
        ...(proxyServer ? { proxyServer } : {}),
        ...(opts.get("proxy-credentials") === "stdin"
          ? { proxyCredentials: proxyCredentialsOf(proxyServer, io.stdin()) }
          : {}),
      });
      print(publicRecord(record));
      return;
    }
    case "stop": {
      const record = await stopDesktop(state, botOf(opts));
      print({ stopped: record !== undefined });
      return;
    }
    case "list":
      reconcile(state);
      print({ desktops: state.records().map(publicRecord) });
      return;
    case "observe": {
      const record = runningRecord(state, botOf(opts));
      const regionText = opts.get("region");
      let region: { x: number; y: number; width: number; height: number } | undefined;
      if (regionText) {
        const parts = regionText.split(",").map(Number);
        if (
          parts.length !== 4 ||
          parts.some((n) => !Number.isInteger(n) || n < 0) ||
          parts[2] === 0 ||
          parts[3] === 0
        ) {
          throw new CliError("INVALID_ARGUMENT", "--region must be x,y,width,height in whole pixels.");
        }
        const [x, y, width, height] = parts as [number, number, number, number];
        region = { x, y, width, height };
      }
      const maxWidth = opts.has("max-width") ? int(opts, "max-width", 0, 16, 7680) : undefined;
      const format = opts.get("format") ?? "png";
      if (!(FRAME_FORMATS as readonly string[]).includes(format)) {
        throw new CliError("INVALID_ARGUMENT", `--format must be one of ${FRAME_FORMATS.join(", ")}.`);
      }
      print(
        await look(state, record, {
          includeImage: opts.get("no-image") !== "true",
          ...(region ? { region } : {}),
          ...(maxWidth ? { maxWidth } : {}),
          format: format as FrameFormat,
          // Absent, WebP is lossless and JPEG takes its default (frame-encoding.ts).
          ...(opts.has("quality") ? { quality: int(opts, "quality", 0, 1, 100) } : {}),
        }),
      );
      return;
    }
    case "act": {
      const record = runningRecord(state, botOf(opts));
      let input: unknown;
      try {
        input = JSON.parse(io.stdin());
      } catch {
        throw new CliError("INVALID_ARGUMENT", "act reads a JSON array of actions on stdin.");
      }
      // A batch that types a secret comes with the values: { actions, secrets } (desktop-actions.ts).
      const { actions: batch, secrets } = secretsOfBatch(input);
      const parsed = desktopActionBatchSchema.safeParse(batch);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new CliError(
          "INVALID_ARGUMENT",
          `Invalid DesktopAction batch: at "${issue?.path.join(".") || "(root)"}": ${issue?.message}`,
        );
      }
      const ok = await runActions(state, record, parsed.data, (line) => io.write({ ...line }), io.signal, secrets);
      print({ done: true, allDone: ok });
      return;
    }
    case "quiesce":
      print({ quiesced: await quiesceDesktops(state) });
      return;
    case "resume":
      print({ resumed: await resumeDesktops(state, home) });
      return;
    case "page": {
      const record = runningRecord(state, botOf(opts));
      const url = opts.get("navigate");
      const expression = opts.get("eval");
      const value = await onFirstPage(record, async (cdp) => {
        if (url) await navigate(cdp, url);
        return expression ? evaluate(cdp, expression) : undefined;
      });
      print({ value: value ?? null });
      return;
    }
    case "open": {
      // A file or folder of the home in a new tab of the bot's browser (desktop-open.ts).
      print(await openInBrowser(runningRecord(state, botOf(opts)), opts.get("path") ?? ""));
      return;
    }
    case "launch": {
      // A desktop application of the image, argv as JSON on stdin (desktop-open.ts).
      const record = runningRecord(state, botOf(opts));
      let argv: unknown;
      try {
        argv = JSON.parse(io.stdin());
      } catch {
        throw new CliError("INVALID_ARGUMENT", "launch reads a JSON array of strings on stdin.");
      }
      print(launchApplication(record, argv));
      return;
    }
    case "browse": {
      // The page browser (docs/architecture.md §5): navigate|snapshot|act, input as JSON on
      // stdin so typed text (passwords) never shows in a process list.
      const record = runningRecord(state, botOf(opts));
      const op = opts.get("op");
      let input: Record<string, unknown> = {};
      if (op === "navigate" || op === "act" || op === "snapshot") {
        try {
          const raw = io.stdin();
          // A snapshot without a request (an older host) reads the page from the top.
          input = (op === "snapshot" && raw.trim() === "" ? {} : JSON.parse(raw)) as Record<string, unknown>;
        } catch {
          throw new CliError("INVALID_ARGUMENT", `browse --op ${op} reads a JSON object on stdin.`);
        }
      }
      const memory = new FileSnapshotMemory(join(state.dir, `page-${record.bot}.json`));
      const result = await onFirstPage(record, async (cdp) => {
        const session = new PageSession(new CdpPageEngine(cdp), memory);
        try {
          if (op === "navigate") return { snapshot: await session.navigate(String(input.url)) };
          if (op === "snapshot") return { snapshot: await session.snapshot({}, input) };
          if (op === "act") {
            const { deltaAfter, secretText, ...action } = input;
            const options = { delta: deltaAfter === true, ...(secretText ? { secretText: secretText as never } : {}) };
            return { outcome: await session.act(action as never, {}, options) };
          }
        } catch (error) {
          if (AgentComputerError.is(error)) throw new CliError(error.code, error.message);
          throw error;
        }
        throw new CliError("INVALID_ARGUMENT", "browse takes --op navigate|snapshot|act.");
      });
      print(result);
      return;
    }
    case "screen": {
      // The screen gateway's capabilities (screen-gateway.ts): JSON with the token, printed once.
      if (sub === "grant") {
        const mode = opts.get("mode");
        if (mode !== "view" && mode !== "control")
          throw new CliError("INVALID_ARGUMENT", "--mode must be view or control.");
        const record = runningRecord(state, botOf(opts));
        print(await grantScreen(state, record, mode, int(opts, "ttl-ms", DEFAULT_TTL_MS, MIN_TTL_MS, MAX_TTL_MS)));
        return;
      }
      throw new CliError(
        "INVALID_ARGUMENT",
        "usage: desktop screen grant --bot ID --mode view|control [--ttl-ms N] | desktop screen revoke --id ID",
      );
    }
    case "terminal": {
      // A shell for the person in control (terminal-servers.ts): JSON with the token, printed once.
      if (sub === "grant") {
        const controlId = opts.get("control-id");
        const fresh = opts.get("new-control") === "true";
        if ((controlId === undefined) === !fresh) {
          throw new CliError(
            "INVALID_ARGUMENT",
            "terminal grant takes --control-id ID (a live control capability of this desktop) or --new-control.",
          );
        }
        const record = runningRecord(state, botOf(opts));
        print(
          await grantTerminal(state, record, {
            ...(controlId === undefined ? {} : { controlId }),
            ttlMs: int(opts, "ttl-ms", DEFAULT_TTL_MS, MIN_TTL_MS, MAX_TTL_MS),
            home,
          }),
        );
        return;
      }
      throw new CliError(
        "INVALID_ARGUMENT",
        "usage: desktop terminal grant --bot ID (--control-id ID | --new-control) [--ttl-ms N] | desktop terminal revoke --id ID",
      );
    }
    case "scan-background":
      print(await runScanBackground(rest, io.signal));
      return;
    default:
      throw new CliError("INVALID_ARGUMENT", USAGE);
  }
}
