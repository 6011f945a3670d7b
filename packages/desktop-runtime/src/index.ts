// Background work on any machine (kept here for existing imports; it lives in core, where the runtime reads it too).
export {
  BACKGROUND_MARKER_DIR,
  type BackgroundCancelOptions,
  type BackgroundWorkCancellation,
  type BackgroundWorkHolder,
  type BackgroundWorkOptions,
  type BackgroundWorkScan,
  cancelBackgroundWork,
  scanBackgroundWork,
} from "@agent-computer/core";
// Desktops over any machine's exec (docs/architecture.md §3, §4).
export { type BrowserProxy, browserProxyOf } from "./desktop/browser-proxy.js";
export { type DesktopTransport, SERVICE_HAND_OVER_COMMAND } from "./desktop/desktop-channel.js";
export type { DesktopCommandLine, DesktopCommandRun } from "./desktop/desktop-command.js";
export {
  CHROMIUM_MANAGED_POLICY_FILE,
  DESKTOP_STATE_ENV,
  DEVTOOLS_TRANSPORT_ENV,
  DISPLAY_APART_CHROMIUM_POLICY,
  DISPLAY_APART_DEPRECATED_POLICIES,
  DISPLAY_HOME,
  DISPLAY_HOME_BYTES,
  DISPLAY_HOME_ENV,
  LOOPBACK_PROXY_COMMAND,
  LOOPBACK_PROXY_ENV,
  LOOPBACK_PROXY_PORT,
  secondUserDisplayEnv,
  TERMINAL_HOST_ENV,
  TERMINAL_HOST_PORT,
  X_ACCESS_ENV,
} from "./desktop/display-apart-policy.js";
export { botIdSchema, LinuxDesktopRuntime } from "./desktop/linux-desktop-runtime.js";
export {
  type LinuxDesktopRuntimeOptions,
  linuxDesktopRuntimeOptionsSchema,
} from "./desktop/linux-desktop-runtime-options.js";
export { LinuxDesktopSession, type LinuxDesktopTarget } from "./desktop/linux-desktop-session.js";
export type { LinuxObservation } from "./desktop/linux-observation.js";
export { type LinuxObserveOptions, linuxObserveOptionsSchema } from "./desktop/linux-observe-options.js";
export { type BrowseRunner, LinuxPageBrowser } from "./desktop/linux-page-browser.js";
export { SCREEN_GATEWAY_PORT } from "./desktop/screen-gateway-port.js";
// The computer image (docs/architecture.md §4): its files, its tag and its sandbox settings.
// provider-docker builds it on an engine (`agent-computer-image`).
export type { ComputerImageExtras } from "./image/computer-image-extras.js";
export {
  COMPUTER_IMAGE_REPOSITORY,
  computerImageFiles,
  computerImageRef,
  computerImageTag,
} from "./image/computer-image-ref.js";
export { COMPUTER_PATH, COMPUTER_SHM_BYTES, computerSeccompProfile } from "./image/computer-sandbox.js";
export { computerImageDir, desktopRuntimePackage } from "./image/desktop-runtime-root.js";
