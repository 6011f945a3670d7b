// The contract every provider implements (docs/architecture.md §3).

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
export type { ActionResult, ActOutcome } from "./contract/act-outcome.js";
export {
  type ComputerSpec,
  computerSpecSchema,
  type ResolvedComputerSpec,
} from "./contract/computer-spec.js";
export {
  type DesktopAction,
  desktopActionBatchSchema,
  desktopActionSchema,
  type ResolvedDesktopAction,
} from "./contract/desktop-action.js";
export { type DesktopOptions, desktopOptionsSchema } from "./contract/desktop-options.js";
export type { DesktopSession } from "./contract/desktop-session.js";
export {
  type EgressCredential,
  type EgressDenial,
  type EgressPolicy,
  type EgressRefusalReason,
  egressCredentialSchema,
  egressHostPatternSchema,
  egressPolicySchema,
  type ResolvedEgressPolicy,
} from "./contract/egress-policy.js";
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecRequest,
  execRequestSchema,
  type OutputListener,
} from "./contract/exec-request.js";
export type { ExecResult } from "./contract/exec-result.js";
export type { FileEntry } from "./contract/file-entry.js";
export {
  capabilityTokenHash,
  GATEWAY_CHALLENGE_HEADER,
  GATEWAY_PROOF_HEADER,
  type GatewayAuthorization,
  gatewayAuthorizationHeader,
  gatewayChallengeHeader,
  gatewayProof,
  gatewayProofMatches,
  isGatewayNonce,
  newGatewayNonce,
  parseGatewayAuthorization,
  parseGatewayChallenge,
} from "./contract/gateway-proof.js";
export { normalizeHomePath } from "./contract/home-path.js";
// Ids and labels (docs/architecture.md §2, §9): one rule per id, one set of label names.
export {
  BOT_ID_PATTERN,
  botIdSchema,
  computerIdSchema,
  HOME_KEY_PATTERN,
  homeKeySchema,
  isBotId,
  isHomeKey,
  workspaceIdSchema,
} from "./contract/ids.js";
export { COMPUTER_LABELS, type ComputerLabel, isLabelValue, labelValueOf } from "./contract/labels.js";
export type { LeaseClaim } from "./contract/lease-claim.js";
export { type ListFilter, listFilterSchema } from "./contract/list-filter.js";
export { type Logger, silentLogger } from "./contract/logger.js";
export type { Machine } from "./contract/machine.js";
export type { MachineFiles } from "./contract/machine-files.js";
export type { Observation } from "./contract/observation.js";
export {
  checkOpContext,
  loggerOf,
  type OpContext,
  type OpContextOptions,
  opContext,
  remainingMs,
  signalOf,
  throwIfDone,
} from "./contract/op-context.js";
export type { PageActOutcome } from "./contract/page-act-outcome.js";
export { type PageAction, pageActionSchema } from "./contract/page-action.js";
export type { PageBrowser } from "./contract/page-browser.js";
export type { PageElement } from "./contract/page-element.js";
export {
  type DesktopActOptions,
  type PageActOptions,
  type PageSecretText,
  secretNameSchema,
} from "./contract/page-secret.js";
export type { PageSnapshot } from "./contract/page-snapshot.js";
export type { PageSnapshotContinuation } from "./contract/page-snapshot-continuation.js";
export type { PageSnapshotDelta } from "./contract/page-snapshot-delta.js";
export type { PageSnapshotRequest } from "./contract/page-snapshot-request.js";
export { type ProviderCapabilities, providerCapabilitiesSchema } from "./contract/provider-capabilities.js";
export { makeProviderRef, type ProviderRef, providerRefId } from "./contract/provider-ref.js";
export type { SandboxProvider } from "./contract/sandbox-provider.js";
export type { ScreenEndpoint } from "./contract/screen-endpoint.js";
export type { TerminalEndpoint } from "./contract/terminal-endpoint.js";
// Errors (docs/architecture.md §11).
export { AgentComputerError, type AgentComputerErrorOptions } from "./errors/agent-computer-error.js";
export { ERROR_CODES, type ErrorCode, RETRYABLE_BY_DEFAULT } from "./errors/error-code.js";
export { parseInput } from "./validation/parse-input.js";
