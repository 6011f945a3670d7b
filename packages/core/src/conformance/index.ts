export { decodePngSize } from "./decode-png.js";
export { defineProviderConformance, type ProviderConformanceOptions } from "./define-provider-conformance.js";
