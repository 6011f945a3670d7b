import type { ServerResponse } from "node:http";

/** One MCP session of the HTTP transport, as the table keeps it. */
export interface TableSession {
  close(): Promise<void>;
}

/** How long an idle session lives and how many there may be. */
export interface SessionLimits {
  /** A session with no request in flight for this long is closed. */
  readonly idleMs: number;
  /** The most sessions open at once, the ones being initialized included. */
  readonly maxSessions: number;
}

interface Entry<S> {
  readonly session: S;
  /** Requests of this session still being answered (an open GET stream is one). */
  inFlight: number;
  /** When its last request ended, or began while none was in flight. */
  lastActive: number;
}

/**
 * The open sessions of `serveMcpHttp`, bounded (issue 45: a client that
 * initialized 2,000 times and never closed kept 59 MiB). A session is idle
 * while none of its requests is in flight; one idle for `idleMs` is closed
 * (its client gets 404 and initializes again, as the transport's
 * specification says). When the table is full, a new session takes the
 * place of the longest-idle one; when every session has a request in
 * flight, `makeRoom` says no and the new client is refused.
 */
export class McpSessionTable<S extends TableSession> {
  private readonly entries = new Map<string, Entry<S>>();
  private opening = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly limits: SessionLimits,
    // Sub-millisecond: two sessions used within one millisecond still have an order.
    private readonly now: () => number = () => performance.now(),
  ) {
    // Checked at most a minute apart: a session ends between idleMs and idleMs plus that.
    this.sweeper = setInterval(() => void this.closeIdle(), Math.max(10, Math.min(limits.idleMs, 60_000)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  get(id: string): S | undefined {
    return this.entries.get(id)?.session;
  }

  /**
   * Counts a request of session `id` in flight until `res` closes, so an
   * open stream keeps its session however long it lasts.
   */
  track(id: string, res: ServerResponse): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    entry.inFlight++;
    entry.lastActive = this.now();
    res.once("close", () => {
      entry.inFlight--;
      entry.lastActive = this.now();
    });
  }

  /**
   * Room for one more session: true when there is (closing the longest-idle
   * session if the table is full), false when every session is busy. A true
   * answer holds a place until `opened` or `abandoned`.
   */
  async makeRoom(): Promise<boolean> {
    // A loop: another initialize may take the place freed while a session closes.
    while (this.entries.size + this.opening >= this.limits.maxSessions) {
      const idle = [...this.entries].filter(([, e]) => e.inFlight === 0);
      const oldest = idle.sort(([, a], [, b]) => a.lastActive - b.lastActive)[0];
      if (!oldest) return false;
      await this.remove(oldest[0]);
    }
    this.opening++;
    return true;
  }

  /** The session `makeRoom` held a place for has its id. */
  opened(id: string, session: S): void {
    this.opening--;
    this.entries.set(id, { session, inFlight: 0, lastActive: this.now() });
  }

  /** The place `makeRoom` held is not needed: the initialize failed. */
  abandoned(): void {
    this.opening--;
  }

  /** Forgets a session (its transport closed); closing it is the caller's. */
  forget(id: string): void {
    this.entries.delete(id);
  }

  /** Closes and forgets a session. */
  async remove(id: string): Promise<void> {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    await entry.session.close().catch(() => undefined);
  }

  /** Closes every session idle for `idleMs` or longer. */
  async closeIdle(): Promise<void> {
    const since = this.now() - this.limits.idleMs;
    const idle = [...this.entries].filter(([, e]) => e.inFlight === 0 && e.lastActive <= since);
    await Promise.all(idle.map(([id]) => this.remove(id)));
  }

  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.entries.keys()].map((id) => this.remove(id)));
  }
}
