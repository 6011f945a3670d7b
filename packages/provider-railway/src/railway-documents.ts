/**
 * The GraphQL operations this provider sends to Railway's public API, each
 * written from the published schema (railwayapp/cli, `src/gql/schema.json`;
 * the field and argument named beside each). Only the fields the provider
 * reads are selected; their answers are checked in railway-answers.ts.
 */

/** Mutation.serviceCreate(input: ServiceCreateInput!): Service! — made without a source, so nothing deploys before its volume is attached. */
export const SERVICE_CREATE = `mutation ServiceCreate($input: ServiceCreateInput!) {
  serviceCreate(input: $input) { id name createdAt }
}`;

/** Mutation.volumeCreate(input: VolumeCreateInput!): Volume! (projectId, environmentId, serviceId, mountPath). */
export const VOLUME_CREATE = `mutation VolumeCreate($input: VolumeCreateInput!) {
  volumeCreate(input: $input) { id name }
}`;

/** Mutation.serviceInstanceUpdate(environmentId: String, input: ServiceInstanceUpdateInput!, serviceId: String!): Boolean! — sets the image source. */
export const SERVICE_INSTANCE_UPDATE = `mutation ServiceInstanceUpdate($environmentId: String, $serviceId: String!, $input: ServiceInstanceUpdateInput!) {
  serviceInstanceUpdate(environmentId: $environmentId, serviceId: $serviceId, input: $input)
}`;

/** Mutation.serviceInstanceDeployV2(commitSha: String, environmentId: String!, serviceId: String!): String! — the new deployment's id. */
export const SERVICE_INSTANCE_DEPLOY = `mutation ServiceInstanceDeploy($environmentId: String!, $serviceId: String!) {
  serviceInstanceDeployV2(environmentId: $environmentId, serviceId: $serviceId)
}`;

/** The Deployment fields the provider reads (Deployment.status: DeploymentStatus!, deploymentStopped, instances: [DeploymentDeploymentInstance!]!). */
const DEPLOYMENT_FIELDS = "id status deploymentStopped instances { id status }";

/** Query.deployment(id: String!): Deployment! */
export const DEPLOYMENT = `query Deployment($id: String!) {
  deployment(id: $id) { ${DEPLOYMENT_FIELDS} }
}`;

/** Query.serviceInstance(environmentId: String!, serviceId: String!): ServiceInstance! — the service's name, latest deployment and domains. */
export const SERVICE_INSTANCE = `query ServiceInstance($environmentId: String!, $serviceId: String!) {
  serviceInstance(environmentId: $environmentId, serviceId: $serviceId) {
    id serviceId serviceName
    latestDeployment { ${DEPLOYMENT_FIELDS} }
    domains { serviceDomains { id domain targetPort } }
  }
}`;

/** Mutation.deploymentStop(id: String!): Boolean! */
export const DEPLOYMENT_STOP = `mutation DeploymentStop($id: String!) {
  deploymentStop(id: $id)
}`;

/** Mutation.serviceDomainCreate(input: ServiceDomainCreateInput!): ServiceDomain! (environmentId, serviceId, targetPort). */
export const SERVICE_DOMAIN_CREATE = `mutation ServiceDomainCreate($input: ServiceDomainCreateInput!) {
  serviceDomainCreate(input: $input) { id domain targetPort }
}`;

/** Mutation.generateShellToken(input: ShellTokenInput!): String! — the exec bridge's JWT (environmentId, instanceId, scope, serviceId, kind). */
export const GENERATE_SHELL_TOKEN = `mutation GenerateShellToken($input: ShellTokenInput!) {
  generateShellToken(input: $input)
}`;

/** Mutation.serviceDelete(environmentId: String, id: String!): Boolean! */
export const SERVICE_DELETE = `mutation ServiceDelete($id: String!, $environmentId: String) {
  serviceDelete(id: $id, environmentId: $environmentId)
}`;

/** Mutation.volumeDelete(volumeId: String!): Boolean! */
export const VOLUME_DELETE = `mutation VolumeDelete($volumeId: String!) {
  volumeDelete(volumeId: $volumeId)
}`;

/** Query.project(id: String!).services(first, after): ProjectServicesConnection! — one page. */
export const PROJECT_SERVICES = `query ProjectServices($id: String!, $after: String) {
  project(id: $id) {
    services(first: 100, after: $after) {
      edges { node { id name createdAt } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

/** Query.environment(id: String!).volumeInstances: EnvironmentVolumeInstancesConnection! — which volume a service mounts. */
export const ENVIRONMENT_VOLUMES = `query EnvironmentVolumes($id: String!, $after: String) {
  environment(id: $id) {
    volumeInstances(first: 100, after: $after) {
      edges { node { id volumeId serviceId mountPath } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;
