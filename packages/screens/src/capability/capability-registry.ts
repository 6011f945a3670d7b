import { parseInput } from "@agent-computer/core";
import type { Lease } from "@agent-computer/leases";
import type { LiveSockets } from "../proxy/live-sockets.js";
import { leaseShape } from "./issue-request-schema.js";
import type { IssuedCapability } from "./issued-capability.js";
import type { SealedCapability } from "./sealed-capability.js";

/**
 * What this process issued and what it revoked, each kept until it expires
 * (an issued capability longer while a socket of it is live).
 */
export class CapabilityRegistry {
  private readonly issued = new Map<string, IssuedCapability>();
  /** Revoked capability ids, kept until the capability would have expired. */
  private readonly revoked = new Map<string, number>();

  constructor(
    private readonly clock: () => number,
    private readonly sockets: LiveSockets,
  ) {}

  get(id: string): IssuedCapability | undefined {
    return this.issued.get(id);
  }

  remember(id: string, issued: IssuedCapability): void {
    this.sweep();
    this.issued.set(id, issued);
  }

  forget(id: string): void {
    this.issued.delete(id);
  }

  /** The lease this process holds for a capability it issued, if it still does. */
  heldControl(id: string): Lease | undefined {
    return this.issued.get(id)?.control;
  }

  /**
   * Refuses `id` until `expiresAt`, with the terminals living under it;
   * returns whether it already was refused, and those terminals.
   */
  revoke(id: string, expiresAt: number): { already: boolean; terminals: IssuedCapability[] } {
    this.sweep();
    const already = this.revoked.has(id);
    this.revoked.set(id, expiresAt);
    // The terminals living under a control screen end with it.
    const terminals = [...this.issued].filter(([, terminal]) => terminal.screen === id);
    for (const [terminalId, terminal] of terminals) {
      this.revoked.set(terminalId, terminal.expiresAt);
      this.issued.delete(terminalId);
    }
    return { already, terminals: terminals.map(([, terminal]) => terminal) };
  }

  /** Revoked here, or a terminal whose control screen was. */
  isRevoked(capability: SealedCapability): boolean {
    return this.revoked.has(capability.id) || (capability.screen !== undefined && this.revoked.has(capability.screen));
  }

  /** See `Screens.updateControl`. */
  updateControl(lease: Lease): number {
    parseInput(leaseShape, lease, "control lease");
    let count = 0;
    for (const issued of this.issued.values())
      if (issued.control && issued.control.key === lease.key && issued.control.token === lease.token) {
        issued.control = lease;
        count++;
      }
    return count;
  }

  /**
   * The live control screen capability issued here for this bot under this
   * lease (the latest to expire), for a terminal to live under.
   */
  liveControlScreen(computerId: string, botId: string, lease: Lease): { id: string; endpointId: string } | undefined {
    this.sweep();
    const now = this.clock();
    let best: { id: string; endpointId: string; expiresAt: number } | undefined;
    for (const [id, issued] of this.issued) {
      const { policy, control } = issued;
      if (policy.mode !== "control" || policy.computerId !== computerId || policy.botId !== botId) continue;
      if (control?.key !== lease.key || control.token !== lease.token) continue;
      if (issued.expiresAt <= now || this.revoked.has(id)) continue;
      if (!best || issued.expiresAt > best.expiresAt)
        best = { id, endpointId: issued.endpointId, expiresAt: issued.expiresAt };
    }
    return best && { id: best.id, endpointId: best.endpointId };
  }

  /** Forgets revocations and issued capabilities past their expiry (a live socket keeps its own). */
  sweep(): void {
    const now = this.clock();
    for (const [id, expiresAt] of this.revoked) if (expiresAt <= now) this.revoked.delete(id);
    const live = this.sockets.bridgedCapabilityIds();
    for (const [id, issued] of this.issued) if (issued.expiresAt <= now && !live.has(id)) this.issued.delete(id);
  }
}
