import { createHash } from "node:crypto";
import { AgentComputerError, COMPUTER_LABELS } from "@agent-computer/core";

/**
 * Railway has no labels on a service (its Service type has none in the
 * published schema), so a computer's service carries them in its name.
 * The schema does not say how long a name may be or which characters it
 * may hold; the service's private host name is made from it
 * (`<name>.railway.internal`), so names here keep to a DNS label: at most
 * 63 characters of lowercase letters, digits and '-'. Each label becomes a
 * 6-hex-digit digest of its key and value, so a list filter matches what
 * was set; the screen limit and who runs the display, which reconnect
 * needs back, are kept in clear (`u` where the display is a second user):
 *
 *   ac1-s<screen limit>[u]-<digest>-<digest>...
 *
 * The prefix is the ownership mark: `list` looks only at services named so.
 */
export const SERVICE_NAME_PREFIX = "ac1-";
const DIGEST_CHARS = 6;
/** A DNS label's length. */
export const MAX_NAME_CHARS = 63;
/** Labels that fit beside the prefix and a screen limit of up to three digits. */
export const MAX_LABELS = Math.floor((MAX_NAME_CHARS - `${SERVICE_NAME_PREFIX}s999u`.length) / (DIGEST_CHARS + 1));

/** Who runs a computer's display: a user of its own, or the bot's. */
export type DisplayMode = "second-user" | "shared";

function digestOf(key: string, value: string): string {
  return createHash("sha256").update(`${key}=${value}`).digest("hex").slice(0, DIGEST_CHARS);
}

/** The service name that stands for `labels` (INVALID_ARGUMENT when they do not fit). */
export function serviceNameOf(labels: Record<string, string>, display: DisplayMode = "shared"): string {
  const screenLimit = Number(labels[COMPUTER_LABELS.screenLimit] ?? 0) || 0;
  const digests = Object.entries(labels)
    .map(([key, value]) => digestOf(key, value))
    .sort();
  const mode = display === "second-user" ? "u" : "";
  const name = `${SERVICE_NAME_PREFIX}${[`s${screenLimit}${mode}`, ...digests].join("-")}`;
  if (digests.length > MAX_LABELS || name.length > MAX_NAME_CHARS) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `A Railway computer's service name holds at most ${MAX_LABELS} labels (${Object.keys(labels).length} given): Railway services have no labels, so they live in the name, kept to a DNS label's ${MAX_NAME_CHARS} characters.`,
    );
  }
  return name;
}

/** What a service's name says: its screen limit, who runs its display, and whether it carries labels. */
export interface NamedLabels {
  readonly screenLimit: number;
  /** A name without the mark is a service made before the display could be a second user: shared. */
  readonly display: DisplayMode;
  has(labels: Record<string, string>): boolean;
}

/** The labels a service name stands for; undefined for a service this project did not make. */
export function labelsOfName(name: string | null | undefined): NamedLabels | undefined {
  if (!name?.startsWith(SERVICE_NAME_PREFIX)) return undefined;
  const words = name.slice(SERVICE_NAME_PREFIX.length).split("-");
  const head = /^s(\d+)(u?)$/.exec(words[0] ?? "");
  if (!head) return undefined;
  const digests = new Set(words.slice(1));
  const named: NamedLabels = {
    screenLimit: Number(head[1]),
    display: head[2] ? "second-user" : "shared",
    has: (labels) => Object.entries(labels).every(([key, value]) => digests.has(digestOf(key, value))),
  };
  return named.has({ [COMPUTER_LABELS.managed]: "true" }) ? named : undefined;
}
