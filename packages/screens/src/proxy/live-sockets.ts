import type { SealedCapability } from "../capability/sealed-capability.js";
import type { ScreenBridge } from "./screen-bridge.js";

/** A socket between its upgrade request and its bridge. */
interface PendingSocket {
  readonly capability: SealedCapability;
  /** Refuses the upgrade and drops the gateway socket, if any yet. */
  readonly abort: () => void;
}

/**
 * The proxy's live sockets: the bridged ones, and those between the upgrade
 * request and the bridge, so `revoke` and `close` reach them too.
 */
export class LiveSockets {
  private readonly bridged = new Set<ScreenBridge>();
  private readonly pending = new Map<string, PendingSocket>();

  /** The bridged sockets, for the control watch to re-check. */
  get bridges(): ReadonlySet<ScreenBridge> {
    return this.bridged;
  }

  /** Tracks a socket while its authority check and gateway connect run. */
  wait(connectionId: string, capability: SealedCapability, abort: () => void): void {
    this.pending.set(connectionId, { capability, abort });
  }

  /** The socket was bridged or refused: no longer pending. */
  settled(connectionId: string): void {
    this.pending.delete(connectionId);
  }

  add(bridge: ScreenBridge): void {
    this.bridged.add(bridge);
  }

  remove(bridge: ScreenBridge): void {
    this.bridged.delete(bridge);
  }

  /** Ends the sockets of the capabilities `ends` picks, closing bridges as "revoked"; returns how many. */
  revoke(ends: (capability: SealedCapability) => boolean): number {
    let closed = 0;
    for (const [, socket] of this.pending)
      if (ends(socket.capability)) {
        socket.abort();
        closed++;
      }
    for (const bridge of [...this.bridged])
      if (ends(bridge.capability)) {
        bridge.close("revoked", 1008, "revoked");
        closed++;
      }
    return closed;
  }

  /** Ends every socket, closing bridges as "proxy" (going away). */
  closeAll(): void {
    for (const [, socket] of this.pending) socket.abort();
    for (const bridge of [...this.bridged]) bridge.close("proxy", 1001, "going away");
  }

  /** The ids of the capabilities with a bridged socket. */
  bridgedCapabilityIds(): Set<string> {
    return new Set([...this.bridged].map((b) => b.capability.id));
  }
}
