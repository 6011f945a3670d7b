import type { Machine } from "@agent-computer/core";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { DISPLAY_LABELS } from "../src/computer-labels.js";
import { checkDockerHost, dockerProvider } from "../src/index.js";

/**
 * The engine and computer image this package's suites run on, or why they
 * are missing: then `suite` is reported (failing under CI, skipped
 * elsewhere) and the file registers nothing else.
 */
export function dockerTestEnvironment(suite?: string) {
  return chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider }, suite);
}

/** The container a computer's display runs in, by the name the computer's label gives; undefined on a shared display. */
export async function displayContainerName(docker: Docker, machine: Machine): Promise<string | undefined> {
  const info = await docker.getContainer(machine.ref.slice("docker:".length)).inspect();
  return info.Config.Labels?.[DISPLAY_LABELS.displayContainer];
}
