export {
  type ComputerQuarantine,
  memoryQuarantine,
  type QuarantineRecords,
  stateStoreQuarantine,
} from "@agent-computer/provider-kit";
export {
  type BuildE2bTemplateOptions,
  buildE2bTemplate,
  buildE2bTemplateOptionsSchema,
  type E2bTemplateStage,
} from "./build-e2b-template.js";
export { E2bMachine } from "./e2b-machine.js";
export { E2B_CAPABILITIES, E2B_METADATA, e2bProvider, type NovitaProvider, novitaProvider } from "./e2b-provider.js";
export {
  type E2bPortUrl,
  type E2bProviderOptions,
  e2bOptionsFromEnv,
  e2bProviderOptionsSchema,
} from "./e2b-provider-options.js";
