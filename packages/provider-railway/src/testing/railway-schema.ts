import { buildSchema, type GraphQLSchema, parse, validate } from "graphql";

/**
 * The part of Railway's public GraphQL schema this provider's operations
 * reach, as SDL: the root fields it sends, and every type those reach
 * whose fields are scalars, enums or other types of this part (input
 * types whole, so any field a client may send is known). Printed from the
 * published schema (railwayapp/cli `src/gql/schema.json`, commit
 * df3838bf117cfa332d0ea28e9d26405639a98b2b) with graphql's
 * buildClientSchema and printType, descriptions left out; a field of a
 * type outside this part is left out with it, so a client that selects one
 * is refused here as it would be answered there only if it exists.
 */
export const RAILWAY_SCHEMA_SDL = `
type Query {
  deployment(id: String!): Deployment!
  serviceInstance(environmentId: String!, serviceId: String!): ServiceInstance!
  project(id: String!): Project!
  environment(id: String!, projectId: String): Environment!
  service(id: String!): Service!
}
type Mutation {
  serviceCreate(input: ServiceCreateInput!): Service!
  volumeCreate(input: VolumeCreateInput!): Volume!
  serviceInstanceUpdate(environmentId: String, input: ServiceInstanceUpdateInput!, serviceId: String!): Boolean!
  serviceInstanceDeployV2(commitSha: String, environmentId: String!, serviceId: String!): String!
  deploymentStop(id: String!): Boolean!
  serviceDomainCreate(input: ServiceDomainCreateInput!): ServiceDomain!
  generateShellToken(input: ShellTokenInput!): String!
  serviceDelete(environmentId: String, id: String!): Boolean!
  volumeDelete(volumeId: String!): Boolean!
}
type Service {
  createdAt: DateTime!
  deletedAt: DateTime
  featureFlags: [ActiveServiceFeatureFlag!]!
  groupId: String
  hasHiddenRegistryCredentialsFromTemplate: Boolean!
  icon: String
  id: ID!
  isRestricted: Boolean!
  name: String!
  project: Project!
  projectId: String!
  templateId: String
  templateServiceId: String
  templateThreadSlug: String
  updatedAt: DateTime!
}
type Volume {
  createdAt: DateTime!
  id: ID!
  name: String!
  project: Project!
  projectId: String!
}
type Deployment {
  canRedeploy: Boolean!
  canRollback: Boolean!
  createdAt: DateTime!
  deploymentStopped: Boolean!
  diagnosis: DeploymentDiagnosis
  environment: Environment!
  environmentId: String!
  id: ID!
  instances: [DeploymentDeploymentInstance!]!
  meta: DeploymentMeta
  projectId: String!
  service: Service!
  serviceId: String
  snapshotId: String
  staticUrl: String
  status: DeploymentStatus!
  statusUpdatedAt: DateTime
  suggestAddServiceDomain: Boolean!
  updatedAt: DateTime!
  url: String
}
type DeploymentDeploymentInstance {
  id: String!
  status: DeploymentInstanceStatus!
}
type ServiceInstance {
  activeDeployments: [Deployment!]!
  buildCommand: String
  builder: Builder!
  createdAt: DateTime!
  cronSchedule: String
  deletedAt: DateTime
  dockerfilePath: String
  domains: AllDomains!
  drainingSeconds: Int
  environmentId: String!
  healthcheckPath: String
  healthcheckTimeout: Int
  id: ID!
  ipv6EgressEnabled: Boolean
  isUpdatable: Boolean!
  latestDeployment: Deployment
  nextCronRunAt: DateTime
  nixpacksPlan: JSON
  numReplicas: Int
  overlapSeconds: Int
  preDeployCommand: JSON
  railpackInfo: RailpackInfo
  railwayConfigFile: String
  region: String
  restartPolicyMaxRetries: Int!
  restartPolicyType: RestartPolicyType!
  rootDirectory: String
  service: Service!
  serviceId: String!
  serviceName: String!
  sleepApplication: Boolean
  startCommand: String
  updatedAt: DateTime!
  upstreamUrl: String
  watchPatterns: [String!]!
}
type AllDomains {
  serviceDomains: [ServiceDomain!]!
}
type ServiceDomain {
  createdAt: DateTime
  deletedAt: DateTime
  domain: String!
  edgeId: String
  environmentId: String!
  id: ID!
  newDomainName: String
  newHostLabel: String
  projectId: String
  serviceId: String!
  suffix: String
  syncStatus: ServiceDomainSyncStatus!
  targetPort: Int
  updatedAt: DateTime
}
type Project {
  baseEnvironment: Environment
  baseEnvironmentId: String
  botPrEnvironments: Boolean!
  createdAt: DateTime!
  deletedAt: DateTime
  description: String
  expiredAt: DateTime
  featureFlags: [ActiveProjectFeatureFlag!]!
  focusedPrEnvironments: Boolean!
  id: ID!
  isPublic: Boolean!
  isTempProject: Boolean!
  name: String!
  prDeploys: Boolean!
  primaryEnvironmentId: String
  services(after: String, before: String, first: Int, last: Int): ProjectServicesConnection!
  subscriptionPlanLimit: SubscriptionPlanLimit!
  subscriptionType: SubscriptionPlanType!
  updatedAt: DateTime!
  workspaceId: String
}
type ProjectServicesConnection {
  edges: [ProjectServicesConnectionEdge!]!
  pageInfo: PageInfo!
}
type ProjectServicesConnectionEdge {
  cursor: String!
  node: Service!
}
type PageInfo {
  endCursor: String
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
}
type Environment {
  canAccess: Boolean!
  canvasGroupRefs: JSON!
  config(decryptVariables: Boolean): EnvironmentConfig!
  configEtag: String!
  createdAt: DateTime!
  deletedAt: DateTime
  id: ID!
  isEphemeral: Boolean!
  name: String!
  projectId: String!
  sourceEnvironment: Environment
  unmergedChangesCount: Int
  updatedAt: DateTime!
  volumeInstances(after: String, before: String, first: Int, last: Int): EnvironmentVolumeInstancesConnection!
}
type EnvironmentVolumeInstancesConnection {
  edges: [EnvironmentVolumeInstancesConnectionEdge!]!
  pageInfo: PageInfo!
}
type EnvironmentVolumeInstancesConnectionEdge {
  cursor: String!
  node: VolumeInstance!
}
type VolumeInstance {
  createdAt: DateTime!
  currentSizeMB: Float!
  deletedAt: DateTime
  environment: Environment!
  environmentId: String!
  externalId: String
  id: ID!
  isPendingDeletion: Boolean!
  mountPath: String!
  region: String
  service: Service!
  serviceId: String
  sizeMB: Int!
  state: VolumeState
  volume: Volume!
  volumeId: String!
}
input ServiceCreateInput {
  branch: String
  environmentId: String
  icon: String
  name: String
  projectId: String!
  registryCredentials: RegistryCredentialsInput
  source: ServiceSourceInput
  templateId: String
  templateServiceId: String
  variables: EnvironmentVariables
}
input RegistryCredentialsInput {
  password: String!
  username: String!
}
input ServiceSourceInput {
  image: String
  repo: String
}
input VolumeCreateInput {
  environmentId: String
  mountPath: String!
  projectId: String!
  region: String
  serviceId: String
}
input ServiceInstanceUpdateInput {
  buildCommand: String
  builder: Builder
  cronSchedule: String
  dockerfilePath: String
  drainingSeconds: Int
  healthcheckPath: String
  healthcheckTimeout: Int
  ipv6EgressEnabled: Boolean
  multiRegionConfig: JSON
  nixpacksPlan: JSON
  numReplicas: Int
  overlapSeconds: Int
  preDeployCommand: [String!]
  railwayConfigFile: String
  region: String
  registryCredentials: RegistryCredentialsInput
  restartPolicyMaxRetries: Int
  restartPolicyType: RestartPolicyType
  rootDirectory: String
  sleepApplication: Boolean
  source: ServiceSourceInput
  startCommand: String
  watchPatterns: [String!]
}
input ServiceDomainCreateInput {
  environmentId: String!
  serviceId: String!
  targetPort: Int
}
input ShellTokenInput {
  environmentId: String!
  instanceId: String!
  kind: String
  port: Int
  scope: String!
  serviceId: String
}
enum ActiveProjectFeatureFlag { PLACEHOLDER }
enum ActiveServiceFeatureFlag { COPY_VOLUME_TO_ENVIRONMENT ENABLE_DOCKER_EXTENSION PLACEHOLDER SKIPPED_BUILDS USE_EXPRESS_DEPLOY USE_EXPRESS_PACKSTORE USE_VM_RUNTIME }
enum Builder { HEROKU NIXPACKS PAKETO RAILPACK }
scalar DateTime
scalar DeploymentDiagnosis
enum DeploymentInstanceStatus { CRASHED CREATED EXITED INITIALIZING REMOVED REMOVING RESTARTING RUNNING SKIPPED STOPPED }
scalar DeploymentMeta
enum DeploymentStatus { BUILDING CRASHED DEPLOYING FAILED INITIALIZING NEEDS_APPROVAL QUEUED REMOVED REMOVING SKIPPED SLEEPING SUCCESS WAITING }
scalar EnvironmentConfig
scalar EnvironmentVariables
scalar JSON
scalar RailpackInfo
enum RestartPolicyType { ALWAYS NEVER ON_FAILURE }
enum ServiceDomainSyncStatus { ACTIVE CREATING DELETED DELETING UNSPECIFIED UPDATING }
scalar SubscriptionPlanLimit
enum SubscriptionPlanType { free hobby pro trial }
enum VolumeState { DELETED DELETING ERROR MIGRATING MIGRATION_PENDING READY RESTORING UPDATING }
`;

let built: GraphQLSchema | undefined;

/** The schema part, built once. */
export function railwaySchema(): GraphQLSchema {
  built ??= buildSchema(RAILWAY_SCHEMA_SDL);
  return built;
}

/** A GraphQL request as posted: `{ query, variables?, operationName? }`. */
export interface GraphQLRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

/**
 * Why a posted body is not a request the schema accepts: not a request at
 * all, a document that does not parse, or one that fails validation
 * (unknown fields or arguments, wrong types, missing variables). Variable
 * values are checked when the document runs (graphql's execute coerces
 * them and refuses a wrong one before any resolver).
 */
export function requestProblems(body: unknown): string[] {
  if (typeof body !== "object" || body === null) return ["the body is not a JSON object"];
  const { query, variables } = body as Partial<GraphQLRequest>;
  if (typeof query !== "string") return ["`query` is not a string"];
  if (variables !== undefined && (typeof variables !== "object" || variables === null || Array.isArray(variables))) {
    return ["`variables` is not an object"];
  }
  try {
    return validate(railwaySchema(), parse(query)).map((error) => error.message);
  } catch (error) {
    return [`the document does not parse: ${(error as Error).message}`];
  }
}
