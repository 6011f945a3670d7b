import { Sandbox, Template } from "e2b";
import { Sandbox as NovitaSandbox, Template as NovitaTemplate } from "novita-sandbox";

/**
 * The SDK a flavour of the provider drives: E2B's `e2b`, or Novita's
 * `novita-sandbox`, a fork of an older E2B SDK with the same `Sandbox`
 * statics, the same envd process client and its own paths and headers.
 * Typed as e2b's: the calls this package makes have the same shapes in both.
 */
export interface SandboxSdk {
  /** The provider kind: the prefix of every ref. */
  readonly kind: "e2b" | "novita";
  /** The service's name in messages. */
  readonly service: string;
  readonly Sandbox: typeof Sandbox;
  /** The SDK's template builder (`Template().fromImage(...)`, `Template.build`): the same wire in both SDKs. */
  readonly Template: typeof Template;
  /** The prefix of the service's environment variables (E2B_API_KEY, NOVITA_API_KEY). */
  readonly envPrefix: "E2B" | "NOVITA";
  /**
   * A command whose kill cannot be confirmed pauses and quarantines the
   * computer (Novita's rule): reconnect refuses it until it is recovered.
   */
  readonly quarantineUnconfirmedKills: boolean;
  /**
   * Bytes move through /files in parts that each fit one request (Novita:
   * its SDK buffers an upload whole, bounds the whole request, body
   * included, by `requestTimeoutMs`, and ignores the caller's abort).
   */
  readonly transfersInParts: boolean;
  /** The service's stock desktop template, used until the computer template exists (none: Novita requires its own). */
  readonly stockTemplate?: string;
}

export const E2B_SDK: SandboxSdk = {
  kind: "e2b",
  service: "E2B",
  Sandbox,
  Template,
  envPrefix: "E2B",
  quarantineUnconfirmedKills: false,
  transfersInParts: false,
  stockTemplate: "desktop",
};

export const NOVITA_SDK: SandboxSdk = {
  kind: "novita",
  service: "Novita",
  Sandbox: NovitaSandbox as unknown as typeof Sandbox,
  Template: NovitaTemplate as unknown as typeof Template,
  envPrefix: "NOVITA",
  quarantineUnconfirmedKills: true,
  transfersInParts: true,
};
