import { computerImageRef } from "@agent-computer/desktop-runtime";
import Docker from "dockerode";
import type { DockerHostCheck } from "./docker-host-check.js";

/**
 * Whether Docker computers can start on this host now: the engine answers
 * and has the computer image (default: `computerImageRef()`). Never throws;
 * says what is missing instead, for a health check or a test suite that
 * must decide to run.
 */
export async function checkDockerHost(options: { docker?: Docker; image?: string } = {}): Promise<DockerHostCheck> {
  const docker = options.docker ?? new Docker();
  const image = options.image ?? (await computerImageRef());
  const missing = await docker.version().then(
    () =>
      docker
        .getImage(image)
        .inspect()
        .then(
          () => undefined,
          () => `the computer image ${image} is not built (run: npx agent-computer-image build)`,
        ),
    (error: Error) => `no Docker engine answers (${error.message}); start dockerd or set DOCKER_HOST`,
  );
  return { docker, image, missing };
}
