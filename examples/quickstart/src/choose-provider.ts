import type { SandboxProvider } from "@agent-computer/core";
import { providerFromEnvironment } from "@agent-computer/mcp-server";
import { note } from "./stage.js";

/**
 * The provider the MCP server would choose (`providerFromEnvironment`,
 * SANDBOX_PROVIDER and each provider's own variables), except that an unset
 * SANDBOX_PROVIDER means a Docker computer where an engine answers (building
 * the computer image on first use), else a host computer with a private
 * display where this machine has the display stack, else the in-process
 * fake; it says which and why. `AGENT_COMPUTER_PROVIDER=fake` (the older switch) still forces the fake one.
 */
export async function chooseProvider(dataDir: string): Promise<SandboxProvider> {
  const env = { ...process.env };
  if (env.AGENT_COMPUTER_PROVIDER === "fake" && !env.SANDBOX_PROVIDER) env.SANDBOX_PROVIDER = "fake";
  const chosen = await providerFromEnvironment(env, {
    dataDir,
    whenUnset: "docker-else-host-else-fake",
    log: note,
  });
  note(`Provider: ${chosen.name}, because ${chosen.reason}.`);
  if (chosen.name === "host") {
    note("A host computer is this machine itself: commands run as you, with nothing isolating them.");
  }
  if (chosen.name === "fake") {
    note("The fake provider runs commands on this host in a temporary folder: not isolated, for demos and tests.");
  }
  return chosen.provider;
}
