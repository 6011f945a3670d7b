export { type BearerVerdict, bearerMatches, bearerVerdict, checkedToken, MIN_TOKEN_LENGTH } from "./bearer-token.js";
export { type CallToolParams, callToolParams } from "./call-tool-params.js";
export type { ChosenProvider } from "./chosen-provider.js";
export { type ComputerMcpServerOptions, createComputerMcpServer } from "./computer-mcp-server.js";
export { prepareComputerImage } from "./prepare-computer-image.js";
export { type ProviderFromEnvironmentOptions, providerFromEnvironment } from "./provider-from-environment.js";
export { refuseSecondMachine } from "./refuse-second-machine.js";
export { SANDBOX_PROVIDER_NAMES, type SandboxProviderName } from "./sandbox-provider-name.js";
export { type McpHttpServer, type ServeMcpHttpOptions, serveMcpHttp } from "./serve-mcp-http.js";
export { type StartedMcpServer, type StartMcpServerOptions, startMcpServer } from "./start-mcp-server.js";
export {
  type ChosenStateStore,
  DATABASE_URL_VARIABLE,
  stateStoreFromEnvironment,
} from "./state-store-from-environment.js";
export { USAGE } from "./usage.js";
