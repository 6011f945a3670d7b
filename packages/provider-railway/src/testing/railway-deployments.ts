import { computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type { ComputerContainers } from "@agent-computer/testing/emulator";
import { type DeploymentRecord, newId, now, type ServiceRecord, type VolumeRecord } from "./railway-records.js";

/** The user an image deployment runs as: the image's own (the computer image's USER is 1000:1000). */
const IMAGE_USER = "1000:1000";

/**
 * The deployments of the emulated services as real containers of their
 * image, made with ComputerContainers' label (so its `removeAll` finds
 * them) but created here, because a Railway deployment mounts the
 * service's volume:
 *
 * - a deployment is a fresh container of the service's image with the
 *   image's own command and user (root when the service's variables hold
 *   RAILWAY_RUN_UID=0), the service's variables and the ones Railway
 *   provides (docs.railway.com, "Using Volumes": RAILWAY_VOLUME_NAME and
 *   RAILWAY_VOLUME_MOUNT_PATH), and its volume mounted at the mount path:
 *   a Docker volume, which starts empty and owned by root, as Railway's
 *   do (zero-intel/zero#60: a non-root image could not write /data);
 * - a new deployment replaces the one before (REMOVED, its container gone);
 * - a stopped deployment (deploymentStop) loses its container: memory and
 *   the container's own disk go, the volume stays.
 */
export class RailwayDeployments {
  constructor(private readonly containers: ComputerContainers) {}

  /** Starts a new deployment of the service; the one before it is removed. */
  deploy(service: ServiceRecord, volume: VolumeRecord | undefined): DeploymentRecord {
    const previous = service.deployments.filter((d) => d.status !== "REMOVED");
    const deployment: DeploymentRecord = {
      id: newId(),
      serviceId: service.id,
      status: "INITIALIZING",
      deploymentStopped: false,
      instance: { id: newId(), status: "INITIALIZING" },
      createdAt: now(),
      updatedAt: now(),
      ip: "",
      user: service.variables.RAILWAY_RUN_UID === "0" ? "0:0" : IMAGE_USER,
    };
    service.deployments.push(deployment);
    void (async () => {
      for (const old of previous) await this.remove(old, "REMOVED");
      deployment.status = "DEPLOYING";
      try {
        const { id, ip } = await this.createContainer(service, volume, deployment);
        Object.assign(deployment, { containerId: id, ip, status: "SUCCESS", updatedAt: now() });
        deployment.instance.status = "RUNNING";
        // Stopped or replaced while it started: its container goes at once.
        if (deployment.deploymentStopped || service.deleted) await this.remove(deployment, deployment.status);
      } catch {
        Object.assign(deployment, { status: "FAILED", updatedAt: now() });
        deployment.instance.status = "CRASHED";
      }
    })();
    return deployment;
  }

  /** deploymentStop: the container goes, the deployment is marked stopped. */
  async stop(deployment: DeploymentRecord): Promise<void> {
    deployment.deploymentStopped = true;
    await this.remove(deployment, deployment.status);
  }

  /** Removes a deployment's container and sets its state (REMOVED when replaced, kept when stopped). */
  async remove(deployment: DeploymentRecord, status: string): Promise<void> {
    const id = deployment.containerId;
    deployment.containerId = undefined;
    deployment.ip = "";
    deployment.status = status;
    deployment.instance.status = status === "REMOVED" ? "REMOVED" : "STOPPED";
    deployment.updatedAt = now();
    if (id) await this.containers.remove(id);
  }

  /** Makes the Docker volume behind a Railway volume (labelled, so close removes it). */
  async createVolume(volume: VolumeRecord): Promise<void> {
    await this.containers.docker.createVolume({
      Name: volume.dockerVolume,
      Labels: { [this.containers.label]: this.containers.instance },
    });
  }

  async removeVolume(volume: VolumeRecord): Promise<void> {
    await this.containers.docker
      .getVolume(volume.dockerVolume)
      .remove({ force: true })
      .catch(() => {});
  }

  /** Removes every Docker volume this emulator made (after its containers are gone). */
  async removeAllVolumes(): Promise<void> {
    const filters = JSON.stringify({ label: [`${this.containers.label}=${this.containers.instance}`] });
    const { Volumes } = await this.containers.docker.listVolumes({ filters }).catch(() => ({ Volumes: [] }));
    for (const volume of Volumes ?? []) {
      await this.containers.docker
        .getVolume(volume.Name)
        .remove({ force: true })
        .catch(() => {});
    }
  }

  private async createContainer(
    service: ServiceRecord,
    volume: VolumeRecord | undefined,
    deployment: DeploymentRecord,
  ): Promise<{ id: string; ip: string }> {
    const env = {
      ...service.variables,
      RAILWAY_SERVICE_ID: service.id,
      RAILWAY_SERVICE_NAME: service.name,
      RAILWAY_DEPLOYMENT_ID: deployment.id,
      RAILWAY_REPLICA_ID: deployment.instance.id,
      ...(volume ? { RAILWAY_VOLUME_NAME: volume.name, RAILWAY_VOLUME_MOUNT_PATH: volume.mountPath } : {}),
    };
    const container = await this.containers.docker.createContainer({
      name: `railway-emulator-${this.containers.instance}-${deployment.id.slice(0, 8)}`,
      Image: service.image as string,
      User: deployment.user,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      Labels: { [this.containers.label]: this.containers.instance, "agent-computer.test/railway-service": service.id },
      HostConfig: {
        Init: true,
        // Railway's runtime profile is not published; Chromium's sandbox needs the computer image's (as every emulator here gives it).
        SecurityOpt: [`seccomp=${computerSeccompProfile()}`],
        NetworkMode: "bridge",
        ...(volume
          ? { Mounts: [{ Type: "volume" as const, Source: volume.dockerVolume, Target: volume.mountPath }] }
          : {}),
      },
    });
    return { id: container.id, ip: await this.containers.start(container.id) };
  }
}
