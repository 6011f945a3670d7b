import type { PageSecretText } from "@agent-computer/core";

/**
 * Where a bot's named secrets come from when its page tools type one
 * (`browser_act` with `secret`): `SecretVault` of `@agent-computer/secrets`,
 * or anything that answers the same. The value goes only to the page
 * browser's `act`, never to a tool result, an event or a log.
 */
export interface SecretSource {
  resolve(input: { workspaceId: string; botId: string; name: string }): Promise<PageSecretText>;
}
