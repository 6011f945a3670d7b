import {
  type ActionResult,
  type ActOutcome,
  AgentComputerError,
  checkOpContext,
  type DesktopAction,
  type DesktopActOptions,
  type DesktopSession,
  desktopActionBatchSchema,
  type ErrorCode,
  type Machine,
  type OpContext,
  parseInput,
  type ScreenEndpoint,
  type TerminalEndpoint,
  throwIfDone,
} from "@agent-computer/core";
import { z } from "zod";
import type { DesktopChannel } from "./desktop-channel.js";
import type { DesktopCommandLine } from "./desktop-command.js";
import { gatewayUrl } from "./gateway-url.js";
import type { LinuxObservation } from "./linux-observation.js";
import { type LinuxObserveOptions, linuxObserveOptionsSchema } from "./linux-observe-options.js";
import { LinuxPageBrowser } from "./linux-page-browser.js";
import { SCREEN_GATEWAY_PORT } from "./screen-gateway-port.js";

/** Where a session's commands go and how to run them. */
export interface LinuxDesktopTarget {
  /** `portUrl`, where the machine has it, reaches the screen gateway; without it screens are UNSUPPORTED. */
  readonly machine: Pick<Machine, "exec" | "workspacePath" | "portUrl">;
  /** Where the desktop verbs go: the resident service, or exec per call. */
  readonly channel: DesktopChannel;
  /** What `launch` may start (LinuxDesktopRuntimeOptions): any program, none, or only those named. */
  readonly launchPrograms?: boolean | "applications" | readonly string[];
}

const OBSERVE_TIMEOUT_MS = 30_000;
/** A batch may hold waits of up to a minute each; the deadline of the caller's context wins when shorter. */
const ACT_TIMEOUT_MS = 10 * 60_000;
const STOP_TIMEOUT_MS = 60_000;
const PAGE_TIMEOUT_MS = 30_000;
const LAUNCH_TIMEOUT_MS = 15_000;
/** A grant may start the gateway and the display's x11vnc. */
const GRANT_TIMEOUT_MS = 45_000;
const REVOKE_TIMEOUT_MS = 20_000;

/**
 * One bot's desktop on one computer, driven through the desktop verbs in
 * the computer: over the resident service's connection, or the `desktop`
 * command through exec (desktop-channel.ts).
 */
export class LinuxDesktopSession implements DesktopSession {
  private released = false;
  /** The bot's visible Chromium tab as text and refs (docs/architecture.md §5). */
  readonly pageBrowser = new LinuxPageBrowser(async (op, input, ctx, carriesSecret) => {
    const context = this.usable(ctx);
    const { summary } = await this.run(["browse", "--bot", this.botId, "--op", op], context, PAGE_TIMEOUT_MS, {
      ...(input === undefined ? {} : { stdin: new TextEncoder().encode(JSON.stringify(input)) }),
      ...(carriesSecret ? { requireService: true } : {}),
    });
    return summary ?? {};
  });

  constructor(
    private readonly target: LinuxDesktopTarget,
    readonly botId: string,
    readonly display: string,
    /** The screen size the desktop runs at. */
    readonly screen: { readonly width: number; readonly height: number },
  ) {}

  async observe(ctx?: OpContext, opts: LinuxObserveOptions = {}): Promise<LinuxObservation> {
    const options = parseInput(linuxObserveOptionsSchema, opts, "observe options");
    const context = this.usable(ctx);
    const args = ["observe", "--bot", this.botId];
    if (options.includeImage === false) args.push("--no-image");
    if (options.region) {
      const { x, y, width, height } = options.region;
      args.push("--region", `${x},${y},${width},${height}`);
    }
    if (options.maxWidth) args.push("--max-width", String(options.maxWidth));
    if (options.format) args.push("--format", options.format);
    if (options.quality !== undefined) args.push("--quality", String(options.quality));
    const { summary } = await this.run(args, context, OBSERVE_TIMEOUT_MS);
    const look = summary as DesktopCommandLine & {
      display: string;
      width: number;
      height: number;
      imageWidth: number;
      imageHeight: number;
      region?: { x: number; y: number; width: number; height: number };
      cursor: { x: number; y: number };
      windowTitle?: string;
      frameHash: string;
      takenAt: number;
      image?: string;
      format?: "png" | "jpeg" | "webp";
    };
    return {
      ...(look.image ? { image: new Uint8Array(Buffer.from(look.image, "base64")) } : {}),
      mimeType: `image/${look.format ?? options.format ?? "png"}`,
      width: look.width,
      height: look.height,
      cursor: look.cursor,
      frameHash: look.frameHash,
      ...(look.windowTitle ? { windowTitle: look.windowTitle } : {}),
      takenAt: look.takenAt,
      imageSize: { width: look.imageWidth, height: look.imageHeight },
      ...(look.region ? { region: look.region } : {}),
      display: look.display,
    };
  }

  async act(actions: DesktopAction[], ctx?: OpContext, options: DesktopActOptions = {}): Promise<ActOutcome> {
    const batch = parseInput(desktopActionBatchSchema, actions, "DesktopAction batch");
    const context = this.usable(ctx);
    // Secrets go only with a batch that types one, and only over the service (desktop-channel.ts).
    const named = new Set(batch.flatMap((a) => (a.type === "type_secret" ? [a.secret] : [])));
    const secrets = (options.secrets ?? [])
      .filter((s) => named.has(s.name))
      .map(({ name, value, origins }) => ({ name, value, origins: [...origins] }));
    const input = named.size > 0 ? { actions: batch, secrets } : batch;
    const { lines, summary, cut } = await this.run(["act", "--bot", this.botId], context, ACT_TIMEOUT_MS, {
      stdin: new TextEncoder().encode(JSON.stringify(input)),
      allowCut: true,
      ...(named.size > 0 ? { requireService: true } : {}),
    });
    const reported = new Map<number, DesktopCommandLine>();
    for (const line of lines) if (typeof line.index === "number") reported.set(line.index, line);
    let failed = false;
    const results: ActionResult[] = batch.map((action, index) => {
      const line = reported.get(index);
      if (line) {
        if (line.status === "failed") failed = true;
        return {
          index,
          type: action.type,
          status: line.status as ActionResult["status"],
          ...(line.uncertain !== undefined ? { uncertain: line.uncertain as boolean } : {}),
          ...(line.error ? { error: line.error as { code: ErrorCode; message: string } } : {}),
          ...(typeof line.png === "string" ? { image: new Uint8Array(Buffer.from(line.png, "base64")) } : {}),
        };
      }
      if (failed) return { index, type: action.type, status: "not-run" };
      // The call was cut (its deadline passed, or the connection dropped) while this action ran: it may have happened.
      failed = true;
      return {
        index,
        type: action.type,
        status: "failed",
        uncertain: true,
        error:
          cut?.code === "TIMEOUT" || !cut
            ? {
                code: "TIMEOUT",
                message: "The batch passed its deadline while this action ran; it may have taken effect.",
              }
            : { code: cut.code, message: `${cut.message} This action may have taken effect.` },
      };
    });
    return { ok: summary !== undefined && !failed, results };
  }

  /**
   * Reads the bot's first browser tab through DevTools on the computer's
   * loopback: navigate to `url` (optional), then evaluate `expression` and
   * return its JSON value. A seed of the page browser (docs/architecture.md §5).
   */
  async evaluateInPage(expression: string | undefined, ctx?: OpContext, opts: { url?: string } = {}): Promise<unknown> {
    const context = this.usable(ctx);
    const args = ["page", "--bot", this.botId];
    if (opts.url !== undefined) args.push("--navigate", parseInput(urlSchema, opts.url, "url"));
    if (expression !== undefined) args.push(`--eval=${expression}`);
    const { summary } = await this.run(args, context, PAGE_TIMEOUT_MS);
    return summary?.value ?? null;
  }

  /**
   * Starts a program on this bot's display, detached, with no output kept:
   * `launch(["xdg-open", path])` opens a file in its default application.
   * Where the runtime's `launchPrograms` is `"applications"`, only the
   * image's desktop applications start (UNSUPPORTED for anything else).
   */
  async launch(argv: string[], ctx?: OpContext): Promise<void> {
    const program = parseInput(z.array(z.string().min(1)).min(1).max(64), argv, "launch argv");
    const context = this.usable(ctx);
    const allowed = this.target.launchPrograms ?? true;
    if (allowed === "applications") {
      await this.run(["launch", "--bot", this.botId], context, LAUNCH_TIMEOUT_MS, {
        stdin: new TextEncoder().encode(JSON.stringify(program)),
      });
      return;
    }
    if (allowed === false || (Array.isArray(allowed) && !allowed.includes(program[0] as string))) {
      const only = Array.isArray(allowed) && allowed.length > 0 ? ` (it starts only ${allowed.join(", ")})` : "";
      throw new AgentComputerError(
        "UNSUPPORTED",
        `This computer's desktops run apart from its programs, so ${program[0]} is not started on the desktop of ${this.botId}${only}; open files in the browser, or read them with the file tools.`,
      );
    }
    // Its own session and no inherited pipes, so the exec returns at once.
    const result = await this.target.machine.exec(
      {
        argv: ["sh", "-c", 'exec setsid -f "$@" </dev/null >/dev/null 2>&1', "launch", ...program],
        env: { DISPLAY: this.display },
        timeoutMs: LAUNCH_TIMEOUT_MS,
      },
      context,
    );
    if (result.exitCode !== 0) {
      throw new AgentComputerError("UNAVAILABLE", `Could not start ${program[0]} on the desktop of ${this.botId}.`);
    }
  }

  /**
   * Opens a file or folder of the computer (an absolute path, resolved
   * inside the home by the caller) on this bot's display: with `xdg-open`
   * in its default application, or, where `launchPrograms` is
   * `"applications"`, in a new tab of the bot's browser (a type the
   * browser would download instead of show is UNSUPPORTED).
   */
  async open(path: string, ctx?: OpContext): Promise<void> {
    const absolute = parseInput(absolutePathSchema, path, "path");
    if (this.target.launchPrograms !== "applications") return this.launch(["xdg-open", absolute], ctx);
    await this.run(["open", "--bot", this.botId, `--path=${absolute}`], this.usable(ctx), LAUNCH_TIMEOUT_MS);
  }

  /**
   * A new capability on the computer's screen gateway for this desktop:
   * connect to `url` with `Authorization: Bearer <token>` before
   * `expiresAt` (open connections outlive it; revoke or release ends them).
   * View capabilities never carry input.
   */
  async screenEndpoint(
    mode: "view" | "control",
    ctx?: OpContext,
    opts: { ttlMs?: number } = {},
  ): Promise<ScreenEndpoint> {
    const screenMode = parseInput(screenModeSchema, mode, "screen mode");
    const { ttlMs } = parseInput(screenEndpointOptionsSchema, opts ?? {}, "screen endpoint options");
    const context = this.usable(ctx);
    const args = ["screen", "grant", "--bot", this.botId, "--mode", screenMode];
    if (ttlMs !== undefined) args.push("--ttl-ms", String(ttlMs));
    const granted = await this.grant(args, context);
    return { mode: screenMode, ...granted };
  }

  /**
   * Ends a screen or terminal capability: its open connections close, it is
   * refused from then on; a control capability's terminals (their shells
   * hung up) end with it. Idempotent.
   */
  async revokeEndpoint(id: string, ctx?: OpContext): Promise<void> {
    const capability = parseInput(capabilityIdSchema, id, "endpoint id");
    const context = checkOpContext(ctx);
    throwIfDone(context, "revoke endpoint");
    // A released desktop's capabilities were all closed by its stop.
    if (this.released) return;
    await this.run(["screen", "revoke", `--id=${capability}`], context, REVOKE_TIMEOUT_MS);
  }

  /**
   * A shell for the person in control, through the same gateway: each
   * websocket to `url` (with `Authorization: Bearer <token>`) gets its own
   * shell as the computer's user, in `<home>/bots/<bot>`, on this display
   * (wire protocol: the README's "Terminal"). It lives under the control
   * capability `controlId` (a control `screenEndpoint`'s id) and ends when
   * that does (revoked, expired, or the desktop released). Without
   * `controlId` a new control capability is granted for the terminal alone,
   * and revoking the terminal ends both. A view capability or an ended one
   * is refused with FENCED_OUT; an unknown id with NOT_FOUND.
   */
  async terminalEndpoint(
    ctx?: OpContext,
    opts: { ttlMs?: number; controlId?: string } = {},
  ): Promise<TerminalEndpoint> {
    const { ttlMs, controlId } = parseInput(terminalEndpointOptionsSchema, opts ?? {}, "terminal endpoint options");
    const context = this.usable(ctx);
    const args = ["terminal", "grant", "--bot", this.botId];
    args.push(...(controlId === undefined ? ["--new-control"] : [`--control-id=${controlId}`]));
    if (ttlMs !== undefined) args.push("--ttl-ms", String(ttlMs));
    return this.grant(args, context);
  }

  /** Runs a `screen grant` or `terminal grant` and turns its path into a websocket URL of the gateway. */
  private async grant(
    args: string[],
    context: OpContext,
  ): Promise<{ id: string; url: string; token: string; expiresAt: number }> {
    const machine = this.target.machine;
    if (!machine.portUrl) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        "This machine offers no port URLs, so its screen gateway cannot be reached; observe and act still work.",
      );
    }
    // First, so a machine whose gateway port is not reachable grants nothing.
    const base = await machine.portUrl(SCREEN_GATEWAY_PORT, { private: true }, context);
    const { summary } = await this.run(args, context, GRANT_TIMEOUT_MS, { requireService: true });
    const granted = summary as DesktopCommandLine & { id: string; token: string; path: string; expiresAt: number };
    return { id: granted.id, url: gatewayUrl(base, granted.path), token: granted.token, expiresAt: granted.expiresAt };
  }

  /** Stops the bot's processes cleanly and frees the slot; the profile stays in the home. */
  async release(ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "desktop release");
    if (this.released) return;
    await this.run(["stop", "--bot", this.botId], context, STOP_TIMEOUT_MS);
    this.released = true;
  }

  private usable(ctx: OpContext | undefined): OpContext {
    const context = checkOpContext(ctx);
    throwIfDone(context, "desktop call");
    if (this.released) {
      throw new AgentComputerError("CONFLICT", `The desktop of ${this.botId} was released; open it again.`);
    }
    return context;
  }

  private run(
    args: string[],
    ctx: OpContext,
    defaultTimeoutMs: number,
    extra: { stdin?: Uint8Array<ArrayBuffer>; allowCut?: boolean; requireService?: boolean } = {},
  ) {
    return this.target.channel.run(args, ctx, { defaultTimeoutMs, ...extra });
  }
}

const urlSchema = z.string().url().max(8192);
const absolutePathSchema = z
  .string()
  .max(4096)
  .refine((p) => p.startsWith("/") && !p.includes("\0"), "an absolute path");
const screenModeSchema = z.enum(["view", "control"]);
const screenEndpointOptionsSchema = z.object({
  /** From 1 s to 24 h; the gateway's default (10 min) when absent. */
  ttlMs: z
    .number()
    .int()
    .min(1000)
    .max(24 * 60 * 60_000)
    .optional(),
});
const capabilityIdSchema = z.string().regex(/^[A-Za-z0-9_-]{22}$/, "a capability id as screenEndpoint returned it");
const terminalEndpointOptionsSchema = screenEndpointOptionsSchema.extend({
  /** The id of a live control capability of this desktop (a control `screenEndpoint`'s). */
  controlId: capabilityIdSchema.optional(),
});
