import { createHash, randomBytes } from "node:crypto";
import { AgentComputerError, COMPUTER_LABELS } from "@agent-computer/core";

/**
 * CreateOS has no labels, and a sandbox's name is "unique per user"
 * (types.ts CreateSandboxRequest.name). What a name may hold is not
 * published, so names keep to the strictest form the SDK states for a
 * name (DiskCreateRequest.name: `^[a-z0-9][a-z0-9-]{0,62}$`): lowercase,
 * digits and dashes, at most 63 characters. Shape:
 *
 *   <prefix>-s<screen limit>-<4 random hex>-<digest>-<digest>...
 *
 * The prefix marks ownership (list keeps only names that start with it);
 * each label is a 6-hex digest of its key and value, so a list filter
 * matches exactly what was set; the random part keeps two computers with
 * equal labels apart. The one value reconnect needs back, the screen
 * limit, is in clear. More labels than fit is INVALID_ARGUMENT at
 * provision, before anything is created.
 */
const DIGEST_CHARS = 6;
/** The longest name used (see above). */
export const MAX_NAME_CHARS = 63;

function digestOf(key: string, value: string): string {
  return createHash("sha256").update(`${key}=${value}`).digest("hex").slice(0, DIGEST_CHARS);
}

/** The name that stands for `labels` under `prefix`. */
export function sandboxNameOf(prefix: string, labels: Record<string, string>): string {
  const screenLimit = Number(labels[COMPUTER_LABELS.screenLimit] ?? 0) || 0;
  const digests = Object.entries(labels)
    .map(([key, value]) => digestOf(key, value))
    .sort();
  const name = [prefix, `s${screenLimit}`, randomBytes(2).toString("hex"), ...digests].join("-");
  if (name.length > MAX_NAME_CHARS) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `A CreateOS sandbox's name keeps at most ${Math.floor((MAX_NAME_CHARS - prefix.length - 9) / (DIGEST_CHARS + 1))} labels (${Object.keys(labels).length} given): the service has no labels, so they live in the name, kept to ${MAX_NAME_CHARS} characters.`,
    );
  }
  return name;
}

/** What a sandbox's name says: its screen limit, and a label matcher. */
export interface NamedLabels {
  readonly screenLimit: number;
  /** Whether the sandbox carries every one of `labels`. */
  has(labels: Record<string, string>): boolean;
}

/** The labels a name stands for; undefined for a sandbox this provider (with this prefix) did not name. */
export function labelsOfName(prefix: string, name: string | undefined): NamedLabels | undefined {
  const words = name?.split("-") ?? [];
  if (words[0] !== prefix || !/^s\d+$/.test(words[1] ?? "") || !/^[0-9a-f]{4}$/.test(words[2] ?? "")) {
    return undefined;
  }
  const digests = new Set(words.slice(3));
  const named: NamedLabels = {
    screenLimit: Number((words[1] as string).slice(1)),
    has: (labels) => Object.entries(labels).every(([key, value]) => digests.has(digestOf(key, value))),
  };
  return named.has({ [COMPUTER_LABELS.managed]: "true" }) ? named : undefined;
}
