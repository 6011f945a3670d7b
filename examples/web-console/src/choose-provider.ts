import type { SandboxProvider } from "@agent-computer/core";
import { type ChosenProvider, providerFromEnvironment } from "@agent-computer/mcp-server";

/**
 * The provider exactly as the quickstart chooses it (`providerFromEnvironment`,
 * SANDBOX_PROVIDER and each provider's own variables): an unset
 * SANDBOX_PROVIDER means a Docker computer where an engine answers (building
 * the computer image on first use), else the in-process fake. It prints which
 * and why, and returns both for the page's header, with the data folder
 * `dataDirOf` gives for that provider.
 */
export async function chooseProvider(
  dataDirOf: (provider: string) => string,
): Promise<{ provider: SandboxProvider; name: string; reason: string; dataDir: string }> {
  const env = { ...process.env };
  // The older switch the quickstart still honours.
  if (env.AGENT_COMPUTER_PROVIDER === "fake" && !env.SANDBOX_PROVIDER) env.SANDBOX_PROVIDER = "fake";
  const chosen: ChosenProvider = await providerFromEnvironment(env, {
    // Only Docker keeps its homes in a data folder.
    dataDir: dataDirOf("docker"),
    whenUnset: "docker-else-fake",
    log: (line) => console.log(line),
  });
  console.log(`Provider: ${chosen.name}, because ${chosen.reason}.`);
  if (chosen.name === "fake") {
    console.log(
      "The fake provider runs commands on this host in a temporary folder; its desktops are drawn in memory, and their screens and terminal are simulated.",
    );
  }
  return { provider: chosen.provider, name: chosen.name, reason: chosen.reason, dataDir: dataDirOf(chosen.name) };
}
