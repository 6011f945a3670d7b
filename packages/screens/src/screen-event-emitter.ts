import type { Logger } from "@agent-computer/core";
import type { ScreenEvent } from "./screen-event.js";

/**
 * Reports each event to the logger (its type as the message, the rest as
 * fields; refusals and failures as warnings) and to `onEvent`. Neither may
 * break the proxy: what they throw is ignored.
 */
export function screenEventEmitter(
  logger: Logger,
  onEvent: ((event: ScreenEvent) => void) | undefined,
): (event: ScreenEvent) => void {
  return (event) => {
    const { type, ...fields } = event;
    const level = type === "screen.proxy.target_rejected" || type.endsWith("_failed") ? "warn" : "info";
    try {
      logger[level](type, fields);
    } catch {}
    try {
      onEvent?.(event);
    } catch {}
  };
}
