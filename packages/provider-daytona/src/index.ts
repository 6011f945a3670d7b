export { DaytonaMachine } from "./daytona-machine.js";
export { DAYTONA_CAPABILITIES, daytonaProvider } from "./daytona-provider.js";
export {
  type DaytonaProviderOptions,
  daytonaProviderOptionsSchema,
  type SignedPreview,
} from "./daytona-provider-options.js";
