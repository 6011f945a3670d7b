import { z } from "zod";

/**
 * A secret's name in a vault (`@agent-computer/secrets`): what a model may
 * see and say instead of the value. Lower-case letters, digits, `.`, `_`
 * and `-`, a letter or digit first, at most 64.
 */
export const secretNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "a secret name: lower-case letters, digits, '.', '_' or '-', at most 64");

/**
 * A named secret's value, resolved by the host for one page action
 * (`PageBrowser.act`'s `secretText`): typed into the field by trusted input
 * only while the page's origin is one of `origins`, never shown in an
 * outcome or a snapshot (the field reads as `[secret <name>]` afterwards).
 */
export interface PageSecretText {
  readonly name: string;
  readonly value: string;
  /** Exact origins (`https://github.com`) the value may be typed on. */
  readonly origins: readonly string[];
}

/** What `PageBrowser.act` takes beside the action. */
export interface PageActOptions {
  /** Answer only what the action changed in the snapshot after it. */
  readonly delta?: boolean;
  /** The value of the action's `secret`, resolved by the host; required when the action names one. */
  readonly secretText?: PageSecretText;
}

/** What `DesktopSession.act` takes beside the batch. */
export interface DesktopActOptions {
  /** The values of the batch's `type_secret` actions, resolved by the host, by name. */
  readonly secrets?: readonly PageSecretText[];
}
