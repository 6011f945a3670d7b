import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { type Logger, parseInput, silentLogger } from "@agent-computer/core";
import type { Lease } from "@agent-computer/leases";
import { z } from "zod";
import type { ScreenAuthority } from "./authority/screen-authority.js";
import { CapabilityIssuer } from "./capability/capability-issuer.js";
import { CapabilityRegistry } from "./capability/capability-registry.js";
import { CapabilitySeal } from "./capability/capability-seal.js";
import { PageServer } from "./http/page-server.js";
import type { IssueScreenCapabilityRequest } from "./issue-screen-capability-request.js";
import type { IssueTerminalCapabilityRequest } from "./issue-terminal-capability-request.js";
import { AuthorityCheck } from "./proxy/authority-check.js";
import { ControlWatch } from "./proxy/control-watch.js";
import { LiveSockets } from "./proxy/live-sockets.js";
import { ScreenProxy } from "./proxy/screen-proxy.js";
import type { ScreenCapability } from "./screen-capability.js";
import type { ScreenEvent } from "./screen-event.js";
import { screenEventEmitter } from "./screen-event-emitter.js";
import type { ScreenRevocation } from "./screen-revocation.js";
import type { Screens } from "./screens.js";
import type { ScreensOptions } from "./screens-options.js";
import type { TerminalCapability } from "./terminal-capability.js";

const optionsSchema = z.object({
  authority: z.custom<ScreenAuthority>(
    (v) =>
      typeof v === "object" &&
      v !== null &&
      typeof (v as ScreenAuthority).open === "function" &&
      typeof (v as ScreenAuthority).check === "function",
    { message: "expected a ScreenAuthority (open and check)" },
  ),
  secret: z.custom<Uint8Array>((v) => v instanceof Uint8Array && v.length === 32, {
    message: "expected 32 bytes (a Uint8Array or Buffer)",
  }),
  logger: z.custom<Logger>((v) => typeof v === "object" && v !== null).optional(),
  onEvent: z.custom<(event: ScreenEvent) => void>((v) => typeof v === "function").optional(),
  publicPath: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)+$/, "expected a path like /screens: no trailing slash, no encoded characters")
    .refine((v) => !v.split("/").includes(".."), "expected no .. segment")
    .optional(),
  maxClientFrameBytes: z.number().int().min(1024).optional(),
  maxBufferedBytes: z.number().int().min(1024).optional(),
  controlCheckIntervalMs: z.number().int().min(50).optional(),
  controlUnavailableGraceMs: z.number().int().nonnegative().optional(),
  authorityTimeoutMs: z.number().int().positive().optional(),
  upstreamHandshakeTimeoutMs: z.number().int().positive().optional(),
  viewerFrameAncestors: z
    .string()
    .regex(/^[^;,\r\n]+$/, "expected CSP sources without ; or ,")
    .optional(),
  clock: z.custom<() => number>((v) => typeof v === "function").optional(),
});

/**
 * Live screens for an app: sealed capabilities, revocation, the websocket
 * proxy and the viewer page. Mount `handleUpgrade` and `handleRequest` on
 * the app's `http.Server` (see README).
 */
export function createScreens(options: ScreensOptions): Screens {
  return new ScreensHost(parseInput(optionsSchema, options, "ScreensOptions") as ScreensOptions);
}

/** `Screens`, wired from its parts: the issuer, the proxy with its control watch, and the page server. */
class ScreensHost implements Screens {
  readonly publicPath: string;
  readonly viewerPath: string;
  readonly terminalPath: string;
  private readonly registry: CapabilityRegistry;
  private readonly issuer: CapabilityIssuer;
  private readonly proxy: ScreenProxy;
  private readonly watch: ControlWatch;
  private readonly pages: PageServer;

  constructor(options: ScreensOptions) {
    const { authority } = options;
    const seal = new CapabilitySeal(options.secret);
    const logger = options.logger ?? silentLogger;
    const emit = screenEventEmitter(logger, options.onEvent);
    const clock = options.clock ?? Date.now;
    this.publicPath = options.publicPath ?? "/screens";
    this.viewerPath = `${this.publicPath}/viewer`;
    this.terminalPath = `${this.publicPath}/terminal`;
    const { publicPath, viewerPath, terminalPath } = this;
    const sockets = new LiveSockets();
    this.registry = new CapabilityRegistry(clock, sockets);
    const { registry } = this;
    const paths = { publicPath, viewerPath, terminalPath };
    this.issuer = new CapabilityIssuer({ authority, seal, registry, sockets, emit, logger, clock, paths });
    const check = new AuthorityCheck(authority, registry, options.authorityTimeoutMs ?? 10_000);
    this.proxy = new ScreenProxy({
      publicPath,
      seal,
      registry,
      sockets,
      check,
      emit,
      clock,
      maxClientFrameBytes: options.maxClientFrameBytes ?? 1024 * 1024,
      maxBufferedBytes: options.maxBufferedBytes ?? 4 * 1024 * 1024,
      upstreamTimeoutMs: options.upstreamHandshakeTimeoutMs ?? 10_000,
    });
    const checkIntervalMs = options.controlCheckIntervalMs ?? 1000;
    const graceMs = options.controlUnavailableGraceMs ?? 5000;
    this.watch = new ControlWatch(authority, sockets, check, checkIntervalMs, graceMs);
    const frameAncestors = options.viewerFrameAncestors ?? "'self'";
    this.pages = new PageServer({ publicPath, frameAncestors, emit, clock });
  }

  issueScreenCapability(request: IssueScreenCapabilityRequest): Promise<ScreenCapability> {
    return this.issuer.issueScreen(request);
  }

  issueTerminalCapability(request: IssueTerminalCapabilityRequest): Promise<TerminalCapability> {
    return this.issuer.issueTerminal(request);
  }

  revoke(capabilityIdOrUrl: string): Promise<ScreenRevocation> {
    return this.issuer.revoke(capabilityIdOrUrl);
  }

  updateControl(lease: Lease): number {
    return this.registry.updateControl(lease);
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    return this.proxy.handleUpgrade(request, socket, head);
  }

  handleRequest(request: IncomingMessage, response: ServerResponse): boolean {
    return this.pages.handleRequest(request, response);
  }

  async close(): Promise<void> {
    this.issuer.close();
    this.watch.stop();
    this.proxy.close();
  }
}
