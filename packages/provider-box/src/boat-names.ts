import { createHash } from "node:crypto";
import { AgentComputerError, COMPUTER_LABELS } from "@agent-computer/core";

/**
 * Boat has no labels, and a sandbox's name is cut at 120 characters
 * (boat-v1.yaml, UpdateSandboxRequest.name), so a name cannot carry
 * labels whole. Each label becomes an 8-character digest of its key and
 * value, so a list filter (`list({ labels })`, the reconciler's deployment
 * label) matches exactly what was set; the one value reconnect needs back,
 * the screen limit, is kept in clear. Shape:
 *
 *   ac1 s<screen limit> <digest> <digest> ...
 *
 * 12 labels fit (the runtime sets up to 7); more is INVALID_ARGUMENT at
 * provision, before anything is created.
 */
const PREFIX = "ac1";
const DIGEST_CHARS = 8;
/** The longest name the service keeps whole. */
export const MAX_NAME_CHARS = 120;

function digestOf(key: string, value: string): string {
  return createHash("sha256").update(`${key}=${value}`).digest("base64url").slice(0, DIGEST_CHARS);
}

/** The name that stands for `labels` (each must be kept: see above). */
export function sandboxNameOf(labels: Record<string, string>): string {
  const screenLimit = Number(labels[COMPUTER_LABELS.screenLimit] ?? 0) || 0;
  const digests = Object.entries(labels)
    .map(([key, value]) => digestOf(key, value))
    .sort();
  const name = [PREFIX, `s${screenLimit}`, ...digests].join(" ");
  if (name.length > MAX_NAME_CHARS) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `A Boat sandbox's name keeps at most ${Math.floor((MAX_NAME_CHARS - 8) / (DIGEST_CHARS + 1))} labels (${Object.keys(labels).length} given): Boat has no labels, so they live in its name, which the service cuts at ${MAX_NAME_CHARS} characters.`,
    );
  }
  return name;
}

/** What a sandbox's name says: whether this project named it, its screen limit, and a label matcher. */
export interface NamedLabels {
  readonly screenLimit: number;
  /** Whether the sandbox carries every one of `labels`. */
  has(labels: Record<string, string>): boolean;
}

/** The labels a name stands for; undefined for a sandbox this project did not name. */
export function labelsOfName(name: string | null | undefined): NamedLabels | undefined {
  const words = name?.split(" ") ?? [];
  if (words[0] !== PREFIX || !/^s\d+$/.test(words[1] ?? "")) return undefined;
  const digests = new Set(words.slice(2));
  const named: NamedLabels = {
    screenLimit: Number((words[1] as string).slice(1)),
    has: (labels) => Object.entries(labels).every(([key, value]) => digests.has(digestOf(key, value))),
  };
  return named.has({ [COMPUTER_LABELS.managed]: "true" }) ? named : undefined;
}
