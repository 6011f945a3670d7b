// Live screens, host side (DESIGN §7): sealed view/control capabilities,
// revocation, the websocket proxy an app mounts, and the noVNC viewer page.
export { runtimeScreenAuthority } from "./authority/runtime-screen-authority.js";
export type { ScreenAuthority } from "./authority/screen-authority.js";
export type { ScreenAuthorityChange } from "./authority/screen-authority-change.js";
export type { ScreenCheckRequest } from "./authority/screen-check-request.js";
export type { ScreenGrant } from "./authority/screen-grant.js";
export type { ScreenOpenRequest } from "./authority/screen-open-request.js";
export type { ScreenRuntime } from "./authority/screen-runtime.js";
export { createScreens } from "./create-screens.js";
export type { IssueScreenCapabilityRequest } from "./issue-screen-capability-request.js";
export type { ScreenCapability } from "./screen-capability.js";
export type { ScreenEvent } from "./screen-event.js";
export type { ScreenPolicy } from "./screen-policy.js";
export type { ScreenRevocation } from "./screen-revocation.js";
export type { Screens } from "./screens.js";
export type { ScreensOptions } from "./screens-options.js";
export type { ScreenViewerState } from "./viewer/screen-viewer-state.js";
export { SCREEN_VIEWER_MESSAGE, SCREEN_VIEWER_RETRY_MESSAGE, VIEWER_FAIL_AFTER_MS } from "./viewer/viewer-page.js";
