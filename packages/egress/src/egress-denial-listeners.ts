import type { EgressDenial } from "@agent-computer/core";

/**
 * Who hears one provider's egress denials: the app's own `onEgressDenied`
 * option and every `SandboxProvider.watchEgressDenials` subscriber (the
 * runtime's, for its `egress-denied` events). Each denial reaches every
 * listener; one that throws is passed over, so it cannot stop the reports
 * to the others or the provider's reading of the proxy's log.
 */
export class EgressDenialListeners {
  private readonly listeners = new Set<(denial: EgressDenial) => void>();

  constructor(first?: (denial: EgressDenial) => void) {
    if (first) this.listeners.add(first);
  }

  /** `SandboxProvider.watchEgressDenials`: subscribes; returns the unsubscribe function. */
  readonly watch = (listener: (denial: EgressDenial) => void): (() => void) => {
    // A wrapper of its own, so the same function subscribed twice is two subscriptions.
    const entry = (denial: EgressDenial) => listener(denial);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  };

  /** Hands `denial` to every listener. */
  readonly notify = (denial: EgressDenial): void => {
    for (const listener of this.listeners) {
      try {
        listener(denial);
      } catch {
        // A listener's own failure is its own; the others still hear the denial.
      }
    }
  };
}
