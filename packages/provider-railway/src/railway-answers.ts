import { z } from "zod";

/**
 * The answers this provider reads, checked with schemas written from the
 * published schema's types (railwayapp/cli `src/gql/schema.json`). Fields
 * the schema marks non-null are required; enums are kept open (a status
 * added later is read as "not ready", never a parse failure).
 */

/** DeploymentDeploymentInstance { id: String!, status: DeploymentInstanceStatus! } */
const deploymentInstance = z.object({ id: z.string(), status: z.string() });

/** Deployment { id: ID!, status: DeploymentStatus!, deploymentStopped: Boolean!, instances: [...]! } */
export const deploymentSchema = z.object({
  id: z.string(),
  status: z.string(),
  deploymentStopped: z.boolean(),
  instances: z.array(deploymentInstance),
});
export type RailwayDeployment = z.infer<typeof deploymentSchema>;

/** ServiceDomain { id: ID!, domain: String!, targetPort: Int } */
export const serviceDomainSchema = z.object({ id: z.string(), domain: z.string(), targetPort: z.number().nullable() });
export type RailwayServiceDomain = z.infer<typeof serviceDomainSchema>;

/** ServiceInstance { id, serviceId, serviceName, latestDeployment: Deployment, domains: AllDomains! } */
export const serviceInstanceSchema = z.object({
  id: z.string(),
  serviceId: z.string(),
  serviceName: z.string(),
  latestDeployment: deploymentSchema.nullable(),
  domains: z.object({ serviceDomains: z.array(serviceDomainSchema) }),
});
export type RailwayServiceInstance = z.infer<typeof serviceInstanceSchema>;

/** Service { id: ID!, name: String!, createdAt: DateTime! } */
export const serviceSchema = z.object({ id: z.string(), name: z.string(), createdAt: z.string() });
export type RailwayService = z.infer<typeof serviceSchema>;

/** PageInfo { hasNextPage: Boolean!, endCursor: String } */
const pageInfo = z.object({ hasNextPage: z.boolean(), endCursor: z.string().nullable() });

/** A connection page: edges of nodes and its PageInfo. */
export const pageOf = <T extends z.ZodType>(node: T) => z.object({ edges: z.array(z.object({ node })), pageInfo });

/** VolumeInstance { id: ID!, volumeId: String!, serviceId: String, mountPath: String! } */
export const volumeInstanceSchema = z.object({
  id: z.string(),
  volumeId: z.string(),
  serviceId: z.string().nullable(),
  mountPath: z.string(),
});

/** DeploymentStatus values after which a deployment serves (SUCCESS) or never will. */
export const DEPLOYMENT_LIVE = "SUCCESS";
export const DEPLOYMENT_DEAD = new Set(["CRASHED", "FAILED", "REMOVED", "REMOVING", "SKIPPED"]);

/** Whether the deployment runs the computer: SUCCESS, not stopped, with a RUNNING instance. */
export function isRunning(deployment: RailwayDeployment | null | undefined): boolean {
  return (
    deployment !== null &&
    deployment !== undefined &&
    deployment.status === DEPLOYMENT_LIVE &&
    !deployment.deploymentStopped &&
    deployment.instances.some((instance) => instance.status === "RUNNING")
  );
}
