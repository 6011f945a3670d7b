export { SHELL_SUBPROTOCOL } from "./exec-bridge.js";
export {
  DEPLOYMENT_DEAD,
  DEPLOYMENT_LIVE,
  isRunning,
  type RailwayDeployment,
  type RailwayService,
  type RailwayServiceDomain,
  type RailwayServiceInstance,
} from "./railway-answers.js";
export { RAILWAY_GRAPHQL_URL, RailwayClient, type RailwayClientOptions, statusOfErrors } from "./railway-client.js";
export * as RAILWAY_DOCUMENTS from "./railway-documents.js";
export { RailwayMachine } from "./railway-machine.js";
export { RAILWAY_CAPABILITIES, railwayProvider } from "./railway-provider.js";
export {
  execUrlOf,
  type RailwayProviderOptions,
  railwayProviderOptionsSchema,
} from "./railway-provider-options.js";
export { SERVICE_VARIABLES } from "./railway-service.js";
export { labelsOfName, SERVICE_NAME_PREFIX, serviceNameOf } from "./service-names.js";
