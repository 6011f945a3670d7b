import { readFile } from "node:fs/promises";
import { AgentComputerError } from "@agent-computer/core";
import type { SecretSource } from "@agent-computer/runtime";
import { staticSecretSource } from "@agent-computer/secrets";

/**
 * The secrets the bot may type by name (`browser_act` with `secret`,
 * `computer_act`'s `type_secret`): AGENT_COMPUTER_SECRETS_FILE names a JSON
 * file the operator wrote, `{ "<name>": { "value": "...", "origins":
 * ["https://..."] } }`. The values stay in this process's memory; the log
 * and every error name secrets, never a value.
 */
export async function secretsFromEnvironment(
  env: Record<string, string | undefined>,
): Promise<{ source: SecretSource; where: string } | undefined> {
  const file = env.AGENT_COMPUTER_SECRETS_FILE?.trim();
  if (!file) return undefined;
  let entries: unknown;
  try {
    entries = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    // A JSON parser's message can quote the file's text: only its kind is said.
    const why = (error as NodeJS.ErrnoException).code ?? (error instanceof SyntaxError ? "not JSON" : "unreadable");
    throw new AgentComputerError("INVALID_ARGUMENT", `AGENT_COMPUTER_SECRETS_FILE (${file}) cannot be read: ${why}.`);
  }
  const source = staticSecretSource(entries as Parameters<typeof staticSecretSource>[0]);
  return { source, where: `${source.names.length} named (${source.names.join(", ") || "none"}) from ${file}` };
}
