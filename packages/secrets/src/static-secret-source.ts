import { AgentComputerError, type PageSecretText, parseInput, secretNameSchema } from "@agent-computer/core";
import { z } from "zod";
import { secretOriginsSchema, secretValueSchema } from "./secret-inputs.js";

const staticSecretsSchema = z.record(
  secretNameSchema,
  z.object({ value: secretValueSchema, origins: secretOriginsSchema }).strict(),
);

/** One secret of `staticSecretSource`: its value and the origins it may be typed on. */
export interface StaticSecret {
  readonly value: string;
  readonly origins: readonly string[];
}

/**
 * A secret source (`createComputerRuntime({ secrets })`) over values the app
 * already holds, such as a file its operator wrote for one server: the same
 * name, value and origin rules as `SecretVault`, kept in this process's
 * memory only, for every bot. Where secrets are shared by workers or change
 * while they run, use `SecretVault`.
 */
export function staticSecretSource(entries: Readonly<Record<string, StaticSecret>>): {
  readonly names: readonly string[];
  resolve(input: { workspaceId: string; botId: string; name: string }): Promise<PageSecretText>;
} {
  const secrets = parseInput(staticSecretsSchema, entries, "secrets");
  return {
    names: Object.keys(secrets).sort(),
    async resolve({ name }) {
      const secret = secrets[name];
      if (!secret) {
        throw new AgentComputerError("NOT_FOUND", `There is no secret named ${name}; ask the app's owner to add it.`);
      }
      return { name, value: secret.value, origins: [...secret.origins] };
    },
  };
}
