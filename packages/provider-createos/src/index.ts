export { CreateosMachine, type CreateosMachineHost } from "./createos-machine.js";
export { labelsOfName, MAX_NAME_CHARS, sandboxNameOf } from "./createos-names.js";
export { CREATEOS_CAPABILITIES, createosProvider } from "./createos-provider.js";
export {
  CREATEOS_API_URL,
  type CreateosProviderOptions,
  createosProviderOptionsSchema,
} from "./createos-provider-options.js";
export { CREATEOS_GONE_STATES, CreateosService } from "./createos-service.js";
