import { AgentComputerError } from "@agent-computer/core";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { buildComputerImage, checkDockerHost } from "@agent-computer/provider-docker";

/**
 * `agent-computer-mcp --prepare`: builds the Docker computer image the
 * server will run (the name AGENT_COMPUTER_IMAGE[_TAG] give, as at start),
 * printing each stage, so the server's own start never builds: a build
 * takes minutes and a client's start-up timeout is seconds (issue 47).
 * Only Docker builds an image here; other providers need nothing.
 */
export async function prepareComputerImage(options: {
  env: Record<string, string | undefined>;
  log: (line: string) => void;
}): Promise<{ image: string; built: boolean }> {
  const { env, log } = options;
  const provider = env.SANDBOX_PROVIDER?.trim() || "docker";
  if (provider !== "docker") {
    log(`SANDBOX_PROVIDER=${provider}: nothing to prepare here (only Docker builds the computer image on this host).`);
    return { image: "", built: false };
  }
  const image = await computerImageRef({ env });
  const host = await checkDockerHost({ image });
  if (host.missing?.startsWith("no Docker engine"))
    throw new AgentComputerError("UNAVAILABLE", host.missing.replace(/^no/, "No"));
  log(`preparing the computer image ${image}`);
  const result = await buildComputerImage({
    docker: host.docker,
    image,
    onProgress: (p) => {
      if (p.status === "progress") {
        if (p.stage === "build" && p.message.trim() !== "") log(`  ${p.message.trim()}`);
        return;
      }
      // The last stage is named "done": its status would only repeat it.
      const stage = p.stage === "done" ? "done" : `${p.stage} ${p.status}`;
      log(`${stage}: ${p.message} (${(p.elapsedMs / 1000).toFixed(1)} s)`);
    },
  });
  log(
    result.built
      ? `computer image ${result.image} built in ${(result.durationMs / 1000).toFixed(0)} s; the server can start now`
      : `computer image ${result.image} is already built; the server can start now`,
  );
  return { image: result.image, built: result.built };
}
