import type { ProviderCapabilities } from "@agent-computer/core";

/**
 * What a computer on a hosted service has when its provider is built on
 * the kit: desktops with several screens, the page browser and the
 * terminal through the shared Linux runtime; the home a folder inside the
 * machine, copied in and out (not mounted); stop keeps the machine (paused,
 * stopped or archived, as the service does); it bills while it runs, so
 * COMPUTER_MAX_ACTIVE_MS applies.
 */
export const HOSTED_COMPUTER_CAPABILITIES: ProviderCapabilities = Object.freeze({
  desktop: true,
  multiScreen: true,
  pageBrowser: true,
  terminal: true,
  billsWhileRunning: true,
  stopKeepsMachine: true,
  mountedHome: false,
});

/** A service's machine ids are opaque: any id it gives of these characters. */
export const SERVICE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
