export { ExecBridgeServer } from "./exec-bridge-server.js";
export { RAILWAY_OPERATIONS } from "./railway-definition.js";
export { RailwayDeployments } from "./railway-deployments.js";
export { RAILWAY_EMULATOR_LABEL, RailwayEmulator, type RailwayEmulatorOptions } from "./railway-emulator.js";
export type { DeploymentRecord, DomainRecord, ServiceRecord, VolumeRecord } from "./railway-records.js";
export { RAILWAY_SCHEMA_SDL, railwaySchema, requestProblems } from "./railway-schema.js";
