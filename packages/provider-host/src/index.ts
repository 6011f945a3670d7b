// Host computers: the machine the app runs on as a bot's computer, without a container (README.md).
export { HOST_COMPUTER_MARKER } from "./computer-processes.js";
export {
  checkDisplayStack,
  DISPLAY_PROGRAMS,
  type DisplayProgram,
  missingDisplayPrograms,
} from "./display-stack.js";
export { HOST_CAPABILITIES, hostProvider } from "./host-provider.js";
export {
  type HostProviderOptions,
  type HostUser,
  hostProviderOptionsSchema,
} from "./host-provider-options.js";
