import { randomUUID } from "node:crypto";
import { AgentComputerError, type Logger, parseInput } from "@agent-computer/core";
import type { Lease } from "@agent-computer/leases";
import { z } from "zod";
import { type AcceptedGrant, acceptedGrant } from "../authority/accepted-grant.js";
import type { ScreenAuthority } from "../authority/screen-authority.js";
import type { TerminalOpenRequest } from "../authority/terminal-open-request.js";
import type { IssueScreenCapabilityRequest } from "../issue-screen-capability-request.js";
import type { IssueTerminalCapabilityRequest } from "../issue-terminal-capability-request.js";
import type { LiveSockets } from "../proxy/live-sockets.js";
import type { ScreenCapability } from "../screen-capability.js";
import type { ScreenEvent } from "../screen-event.js";
import type { ScreenPolicy } from "../screen-policy.js";
import type { ScreenRevocation } from "../screen-revocation.js";
import type { TerminalCapability } from "../terminal-capability.js";
import type { CapabilityRegistry } from "./capability-registry.js";
import type { CapabilitySeal } from "./capability-seal.js";
import { issueScreenSchema, issueTerminalSchema, MAX_TTL_MS } from "./issue-request-schema.js";
import type { IssuedCapability } from "./issued-capability.js";
import { policyOf } from "./policy-of.js";
import type { SealedCapability } from "./sealed-capability.js";

/** What the issuer works with. */
interface CapabilityIssuerParts {
  readonly authority: ScreenAuthority;
  readonly seal: CapabilitySeal;
  readonly registry: CapabilityRegistry;
  readonly sockets: LiveSockets;
  readonly emit: (event: ScreenEvent) => void;
  readonly logger: Logger;
  readonly clock: () => number;
  /** The `Screens` paths the capability URLs are built on. */
  readonly paths: { readonly publicPath: string; readonly viewerPath: string; readonly terminalPath: string };
}

/**
 * Issues sealed capabilities (a gateway endpoint from the authority, sealed
 * with its policy and lease) and revokes them: `Screens.issueScreenCapability`,
 * `issueTerminalCapability` and `revoke`.
 */
export class CapabilityIssuer {
  private closing = false;

  constructor(private readonly parts: CapabilityIssuerParts) {}

  async issueScreen(request: IssueScreenCapabilityRequest): Promise<ScreenCapability> {
    const input = parseInput(issueScreenSchema, request, "screen capability request");
    this.refuseWhenClosed();
    // The caller's own lease object: a lease engine only accepts what it issued.
    const control = input.mode === "control" ? request.control : undefined;
    const { computerId, botId, mode, ttlMs } = input;
    const opened = await this.parts.authority.open({ computerId, botId, mode, ttlMs, control });
    const grant = await acceptedGrant(opened, mode);
    const { id, sealed, expiresAt } = this.register({ mode, computerId, botId }, ttlMs, grant, control, undefined);
    const { publicPath, viewerPath } = this.parts.paths;
    return {
      id,
      mode,
      url: `${publicPath}/c/${sealed}`,
      viewerUrl: `${viewerPath}#c=${sealed}&mode=${mode}`,
      expiresAt,
    };
  }

  async issueTerminal(request: IssueTerminalCapabilityRequest): Promise<TerminalCapability> {
    const input = parseInput(issueTerminalSchema, request, "terminal capability request");
    this.refuseWhenClosed();
    const { authority } = this.parts;
    const openTerminal = authority.openTerminal?.bind(authority);
    if (!openTerminal)
      throw new AgentComputerError("UNSUPPORTED", "The screen authority gives no terminals (it has no openTerminal).");
    // The caller's own lease object, as for control.
    const control = request.control;
    const { computerId, botId, ttlMs } = input;
    const { grant, screen } = await this.openUnderScreen(openTerminal, { computerId, botId, ttlMs, control });
    const accepted = await acceptedGrant(grant, "terminal");
    const policy: ScreenPolicy = { mode: "terminal", computerId, botId };
    const { id, sealed, expiresAt } = this.register(policy, ttlMs, accepted, control, screen?.id);
    const { publicPath, terminalPath } = this.parts.paths;
    return {
      id,
      url: `${publicPath}/t/${sealed}`,
      terminalUrl: `${terminalPath}#c=${sealed}`,
      expiresAt,
      screenCapabilityId: screen?.id ?? null,
    };
  }

  async revoke(capabilityIdOrUrl: string): Promise<ScreenRevocation> {
    const { id, policy, expiresAt, issued } = this.revocationTarget(capabilityIdOrUrl);
    const { already, terminals } = this.parts.registry.revoke(id, expiresAt);
    const closed = this.parts.sockets.revoke((capability) => capability.id === id || capability.screen === id);
    const endpointRevoked = issued ? await this.revokeEndpoint(id, issued, policy) : false;
    // The gateway ends them with the control endpoint already; this is for a gateway that did not.
    await Promise.allSettled(terminals.map((terminal) => terminal.revoke()));
    if (!already || closed > 0 || endpointRevoked)
      this.parts.emit({
        type: "screen.capability.revoked",
        at: this.parts.clock(),
        capabilityId: id,
        policy,
        closedConnections: closed,
        endpointRevoked,
      });
    return { id, closedConnections: closed, endpointRevoked };
  }

  /** Refuses to issue from now on. */
  close(): void {
    this.closing = true;
  }

  private refuseWhenClosed(): void {
    if (this.closing) throw new AgentComputerError("ABORTED", "These screens were closed.");
  }

  /**
   * Opens a terminal under the live control screen issued for this bot and
   * lease when there is one, else with a control endpoint of its own.
   */
  private async openUnderScreen(
    openTerminal: (request: TerminalOpenRequest) => Promise<unknown>,
    { computerId, botId, ttlMs, control }: TerminalOpenRequest,
  ): Promise<{ grant: unknown; screen: { id: string; endpointId: string } | undefined }> {
    const screen = this.parts.registry.liveControlScreen(computerId, botId, control);
    if (!screen) return { grant: await openTerminal({ computerId, botId, ttlMs, control }), screen };
    try {
      return { grant: await openTerminal({ computerId, botId, ttlMs, control, controlId: screen.endpointId }), screen };
    } catch (error) {
      if (!AgentComputerError.is(error, "FENCED_OUT", "NOT_FOUND")) throw error;
      // The gateway no longer has that control endpoint (its computer was
      // replaced, say): the terminal gets a control endpoint of its own.
      return { grant: await openTerminal({ computerId, botId, ttlMs, control }), screen: undefined };
    }
  }

  /** Seals a capability for `grant`, remembers it and reports it. */
  private register(
    policy: ScreenPolicy,
    ttlMs: number,
    grant: AcceptedGrant,
    control: Lease | undefined,
    screen: string | undefined,
  ): { id: string; sealed: string; expiresAt: number } {
    const { endpoint } = grant;
    const id = randomUUID();
    const expiresAt = Math.min(this.parts.clock() + ttlMs, endpoint.expiresAt);
    const sealed = this.parts.seal.seal({
      id,
      ...policy,
      expiresAt,
      endpoint: { id: endpoint.id, url: endpoint.url, token: endpoint.token, expiresAt: endpoint.expiresAt },
      ...(control ? { control: sealedLease(control, policy) } : {}),
      ...(screen === undefined ? {} : { screen }),
    });
    this.parts.registry.remember(id, {
      policy,
      expiresAt,
      revoke: grant.revoke,
      endpointId: endpoint.id,
      screen,
      control,
    });
    this.parts.emit({ type: "screen.capability.issued", at: this.parts.clock(), capabilityId: id, policy, expiresAt });
    return { id, sealed, expiresAt };
  }

  /**
   * What `revoke` was given, as an id with what is known of it: from the
   * seal when it was a URL or blob, else from what this process issued.
   */
  private revocationTarget(capabilityIdOrUrl: string): {
    id: string;
    policy: ScreenPolicy | null;
    expiresAt: number;
    issued: IssuedCapability | undefined;
  } {
    const target = parseInput(z.string().min(1).max(8192), capabilityIdOrUrl, "capability id or URL");
    const sealed =
      /(?:\/[ct]\/|[#&?]c=)([A-Za-z0-9_-]+)/.exec(target)?.[1] ?? (target.length > 64 ? target : undefined);
    const capability = sealed === undefined ? undefined : this.opened(sealed);
    const id = capability?.id ?? target;
    const issued = this.parts.registry.get(id);
    return {
      id,
      policy: (capability && policyOf(capability)) ?? issued?.policy ?? null,
      expiresAt: capability?.expiresAt ?? issued?.expiresAt ?? this.parts.clock() + MAX_TTL_MS,
      issued,
    };
  }

  private opened(sealed: string): SealedCapability {
    const capability = this.parts.seal.open(sealed);
    if (!capability)
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        "That capability does not open here: revoke takes an id or a URL these screens issued.",
      );
    return capability;
  }

  /** Forgets an issued capability and ends its gateway endpoint; whether that worked. */
  private async revokeEndpoint(id: string, issued: IssuedCapability, policy: ScreenPolicy | null): Promise<boolean> {
    this.parts.registry.forget(id);
    try {
      await issued.revoke();
      return true;
    } catch {
      this.parts.logger.warn("screen.capability.endpoint_revoke_failed", { capabilityId: id, policy });
      return false;
    }
  }
}

/** The fields of the user-control lease a capability is sealed with. */
function sealedLease(control: Lease, policy: ScreenPolicy): NonNullable<SealedCapability["control"]> {
  return {
    kind: "user-control",
    key: control.key,
    holder: control.holder,
    token: control.token,
    computerId: policy.computerId,
    botId: policy.botId,
    ttlMs: control.ttlMs,
    grantedAt: control.grantedAt,
    expiresAt: control.expiresAt,
  };
}
