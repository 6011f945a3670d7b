import { performance } from "node:perf_hooks";
import type { Logger } from "@agent-computer/core";
import type { ComputerEvent } from "./computer-event.js";

/** Hands each lifecycle event to the log and to every listener; a listener that throws is logged, never fatal. */
export class ComputerEvents {
  private readonly listeners = new Set<(event: ComputerEvent) => void>();

  constructor(
    private readonly logger: Logger,
    private readonly clock: () => number,
  ) {}

  /** Subscribes to lifecycle events; returns the unsubscribe function. */
  on(listener: (event: ComputerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reports a step of `computerId` that began at `started` (performance.now()) and just finished. */
  emit(type: ComputerEvent["type"], computerId: string, started: number, detail: ComputerEvent["detail"]): void {
    const event: ComputerEvent = {
      type,
      computerId,
      at: this.clock(),
      durationMs: Math.round(performance.now() - started),
      detail,
    };
    this.logger.info(`computer ${type}`, { computerId, durationMs: event.durationMs, ...detail });
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.warn("a computer event listener threw", { error: String(error) });
      }
    }
  }
}
