import type { Machine } from "@agent-computer/core";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll, beforeAll, expect } from "vitest";
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

/**
 * One computer on the shared display (displayContainer: false) for the
 * describe block that calls this, so the bot's shell and the display's
 * processes (X, openbox, the browser) share a container, as a test that
 * plants their faults needs; `sh` runs a script there that must succeed
 * and gives its output.
 */
export function sharedDisplayComputer(
  env: Awaited<ReturnType<typeof dockerTestEnvironment>>,
  name: string,
): { machine: () => Machine; sh: (script: string) => Promise<string> } {
  let machine: Machine | undefined;
  beforeAll(async () => {
    const provider = env.provider({ dataDir: await temporaryDataDir(), displayContainer: false });
    machine = await provider.provision({ computerId: name, homeKey: `${name}-${Date.now()}` });
  }, 120_000);
  afterAll(async () => {
    await machine?.destroy();
  });
  const current = () => {
    if (!machine) throw new Error(`the ${name} computer was not provisioned`);
    return machine;
  };
  const sh = async (script: string) => {
    const result = await current().exec({ argv: ["sh", "-c", script] });
    expect(result.exitCode, Buffer.from(result.stderr).toString()).toBe(0);
    return Buffer.from(result.stdout).toString().trim();
  };
  return { machine: current, sh };
}
