import { join } from "node:path";
import type { SandboxProvider } from "@agent-computer/core";
import { dockerProvider } from "@agent-computer/provider-docker";
import { createFakeProvider } from "@agent-computer/testing";
import Docker from "dockerode";

/**
 * The provider a soak runs on. Docker uses the computer image already built
 * (`.ci/docker-setup.sh` or `npm run demo` builds it) and keeps homes under
 * `dataDir`, the home store's folder, as a mounted-home provider must.
 */
export async function soakProvider(name: "fake" | "docker", dataDir: string): Promise<SandboxProvider> {
  if (name === "fake") return createFakeProvider({ root: join(dataDir, "fake") });
  const docker = new Docker();
  await Promise.race([
    docker.version(),
    new Promise((_, reject) => setTimeout(() => reject(new Error("no answer within 5 s")), 5000).unref()),
  ]).catch((error: Error) => {
    throw new Error(`No Docker engine answers (${error.message}); run .ci/docker-setup.sh or use the fake provider.`);
  });
  return dockerProvider({ docker, dataDir });
}
