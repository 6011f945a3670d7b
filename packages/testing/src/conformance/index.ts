export { decodePngSize } from "./decode-png.js";
export { definePageBrowserConformance, type PageBrowserConformanceOptions } from "./define-page-browser-conformance.js";
export { defineProviderConformance, type ProviderConformanceOptions } from "./define-provider-conformance.js";
export {
  checkFencingHistory,
  defineStateStoreConformance,
  type FencingEvent,
  type FencingViolation,
  type LeaseContentionOptions,
  type LeaseContentionResult,
  runLeaseContention,
  type StateStoreConformanceOptions,
} from "./define-state-store-conformance.js";
export { PAGE_FIXTURES } from "./page-fixtures.js";
