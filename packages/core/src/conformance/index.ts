export { defineProviderConformance, type ProviderConformanceOptions } from "./define-provider-conformance.js";
export { decodePngSize } from "./decode-png.js";
