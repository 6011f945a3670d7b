import type { SandboxProvider } from "@agent-computer/core";
import { buildComputerImage, dockerProvider } from "@agent-computer/provider-docker";
import { createFakeProvider } from "@agent-computer/testing";
import Docker from "dockerode";

/**
 * A Docker computer when an engine answers (building the computer image on
 * first use), else the in-process fake provider, and says which and why.
 * `AGENT_COMPUTER_PROVIDER=fake` forces the fake one.
 */
export async function chooseProvider(dataDir: string): Promise<SandboxProvider> {
  if (process.env.AGENT_COMPUTER_PROVIDER === "fake") return fake("AGENT_COMPUTER_PROVIDER=fake");
  const docker = new Docker();
  const engine = await Promise.race([
    docker.version().then(
      (v) => `Docker ${v.Version}`,
      (error: Error) => new Error(error.message),
    ),
    new Promise<Error>((resolve) => setTimeout(() => resolve(new Error("no answer within 3 s")), 3000).unref()),
  ]);
  if (engine instanceof Error) return fake(`no Docker engine answers (${engine.message})`);
  console.log(`Provider: docker (${engine} answers).`);
  const result = await buildComputerImage({
    docker,
    onProgress: (p) => {
      // Only the slow stages are worth a line; a present image needs none.
      const slow = p.stage === "base-image" || p.stage === "build";
      if (slow && (p.status === "started" || p.status === "done"))
        console.log(`  image ${p.stage}: ${p.message} (${p.elapsedMs} ms)`);
    },
  });
  console.log(`  computer image ${result.image}${result.built ? " (built now)" : ""}`);
  return dockerProvider({ docker, dataDir });
}

function fake(why: string): SandboxProvider {
  console.log(`Provider: fake, because ${why}.`);
  console.log(
    "  The fake provider runs commands on this host in a temporary folder: not isolated, for demos and tests.",
  );
  return createFakeProvider();
}
