// Live screens, host side (docs/architecture.md §7): sealed view/control/terminal
// capabilities, revocation, the websocket proxy an app mounts, the noVNC
// viewer page and the xterm terminal page; the Files window (files/).
export { runtimeScreenAuthority } from "./authority/runtime-screen-authority.js";
export type { ScreenAuthority } from "./authority/screen-authority.js";
export type { ScreenAuthorityChange } from "./authority/screen-authority-change.js";
export type { ScreenCheckRequest } from "./authority/screen-check-request.js";
export type { ScreenGrant } from "./authority/screen-grant.js";
export type { ScreenOpenRequest } from "./authority/screen-open-request.js";
export type { ScreenRuntime } from "./authority/screen-runtime.js";
export type { TerminalGrant } from "./authority/terminal-grant.js";
export type { TerminalOpenRequest } from "./authority/terminal-open-request.js";
export { createScreens } from "./create-screens.js";
export { createFiles } from "./files/create-files.js";
export type { Files } from "./files/files.js";
export type { FilesCapability } from "./files/files-capability.js";
export type { FilesHomeStore } from "./files/files-home-store.js";
export type { FilesOptions } from "./files/files-options.js";
export { FILES_PAGE_MESSAGE } from "./files/files-page.js";
export type { FilesRuntime } from "./files/files-runtime.js";
export type { IssueFilesCapabilityRequest } from "./files/issue-files-capability-request.js";
export type { IssueScreenCapabilityRequest } from "./issue-screen-capability-request.js";
export type { IssueTerminalCapabilityRequest } from "./issue-terminal-capability-request.js";
export type { ScreenCapability } from "./screen-capability.js";
export type { ScreenEvent } from "./screen-event.js";
export type { ScreenPolicy } from "./screen-policy.js";
export type { ScreenRevocation } from "./screen-revocation.js";
export type { Screens } from "./screens.js";
export type { ScreensOptions } from "./screens-options.js";
export {
  TERMINAL_FAIL_AFTER_MS,
  TERMINAL_PAGE_MESSAGE,
  TERMINAL_PAGE_RETRY_MESSAGE,
} from "./terminal/terminal-page.js";
export type { TerminalPageState } from "./terminal/terminal-page-state.js";
export type { TerminalCapability } from "./terminal-capability.js";
export type { ScreenViewerState } from "./viewer/screen-viewer-state.js";
export { SCREEN_VIEWER_MESSAGE, SCREEN_VIEWER_RETRY_MESSAGE, VIEWER_FAIL_AFTER_MS } from "./viewer/viewer-page.js";
