// Background work on any machine: marker holders found (and cancelled) by the in-computer scanner.
export type { BackgroundCancelOptions } from "./background/background-cancel-options.js";
export type { BackgroundWorkCancellation } from "./background/background-work-cancellation.js";
export type { BackgroundWorkHolder } from "./background/background-work-holder.js";
export type { BackgroundWorkOptions } from "./background/background-work-options.js";
export type { BackgroundWorkScan } from "./background/background-work-scan.js";
export {
  BACKGROUND_MARKER_DIR,
  cancelBackgroundWork,
  scanBackgroundWork,
} from "./background/scan-background-work.js";
// Desktops over any machine's exec (docs/architecture.md §3, §4).
export { type BrowserProxy, browserProxyOf } from "./desktop/browser-proxy.js";
export type { DesktopCommandLine, DesktopCommandRun } from "./desktop/desktop-command.js";
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
// Home files through any provider's command channel, resolved inside the machine.
export { ExecHomeFiles } from "./home/exec-home-files.js";
export type { HomeScriptRunner } from "./home/home-script-runner.js";
// The computer image (docs/architecture.md §4): its tag, its sandbox settings, and its build.
export { buildComputerImage } from "./image/build-computer-image.js";
export type { BuildComputerImageOptions } from "./image/build-computer-image-options.js";
export type { BuildComputerImageResult } from "./image/build-computer-image-result.js";
export type { ComputerImageExtras } from "./image/computer-image-extras.js";
export {
  COMPUTER_IMAGE_REPOSITORY,
  computerImageFiles,
  computerImageRef,
  computerImageTag,
} from "./image/computer-image-ref.js";
export { COMPUTER_SHM_BYTES, computerSeccompProfile } from "./image/computer-sandbox.js";
export { debianMirrorOfThisMachine } from "./image/debian-mirror.js";
export { computerImageDir, desktopRuntimePackage } from "./image/desktop-runtime-root.js";
export { BASE_IMAGE, ensureBaseImage } from "./image/ensure-base-image.js";
export type { ImageBuildProgress } from "./image/image-build-progress.js";
export type { ImageBuildStage } from "./image/image-build-stage.js";
