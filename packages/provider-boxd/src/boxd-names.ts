import { createHash, randomBytes } from "node:crypto";
import { AgentComputerError, COMPUTER_LABELS } from "@agent-computer/core";

/**
 * boxd machines have no labels, and a machine's name is the first label of
 * its public host name (`https://<name>.boxd.sh`), so it must be a DNS
 * label: at most 63 of a-z, 0-9 and `-`. The name carries the labels this
 * project sets: a fixed prefix (what lists and reconnects recognise as
 * ours), six random characters (names are unique per organisation, and a
 * computer replaced while its old machine still exists must get a new
 * one), the screen limit in clear (reconnect needs it back), then a
 * 5-character digest of each label's key and value, so a list filter
 * matches exactly what was set. Shape:
 *
 *   ac-<random>-s<screen limit>-<digest>-<digest>...
 *
 * 8 labels fit; more is INVALID_ARGUMENT at provision, before anything is made.
 */
const PREFIX = "ac";
const DIGEST_CHARS = 5;
const RANDOM_CHARS = 6;
/** The longest DNS label, and so the longest name a public host name can carry. */
export const MAX_NAME_CHARS = 63;
const NAME_FORM = /^ac-[0-9a-z]{6}-s\d{1,3}(-[0-9a-z]{5})*$/;

function digestOf(key: string, value: string): string {
  // Base 36 of the first 4 bytes, padded: lower-case letters and digits only.
  const number = createHash("sha256").update(`${key}=${value}`).digest().readUInt32BE(0);
  return number.toString(36).padStart(7, "0").slice(-DIGEST_CHARS);
}

function randomPart(): string {
  const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz";
  return Array.from(randomBytes(RANDOM_CHARS), (byte) => alphabet[byte % alphabet.length]).join("");
}

/** A fresh machine name that stands for `labels`. */
export function machineNameOf(labels: Record<string, string>): string {
  const screenLimit = Number(labels[COMPUTER_LABELS.screenLimit] ?? 0) || 0;
  const digests = [...new Set(Object.entries(labels).map(([key, value]) => digestOf(key, value)))].sort();
  const name = [PREFIX, randomPart(), `s${screenLimit}`, ...digests].join("-");
  if (name.length > MAX_NAME_CHARS) {
    const room = Math.floor((MAX_NAME_CHARS - 13) / (DIGEST_CHARS + 1));
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `A boxd machine's name keeps at most ${room} labels (${Object.keys(labels).length} given): boxd has no labels, so they live in the name, which is a ${MAX_NAME_CHARS}-character DNS label (its public host name).`,
    );
  }
  return name;
}

/** What a machine's name says: its screen limit, and a label matcher. */
export interface NamedLabels {
  readonly screenLimit: number;
  /** Whether the machine carries every one of `labels`. */
  has(labels: Record<string, string>): boolean;
}

/** The labels a name stands for; undefined for a machine this project did not name. */
export function labelsOfName(name: string | null | undefined): NamedLabels | undefined {
  if (!name || !NAME_FORM.test(name)) return undefined;
  const words = name.split("-");
  const digests = new Set(words.slice(3));
  const named: NamedLabels = {
    screenLimit: Number((words[2] as string).slice(1)),
    has: (labels) => Object.entries(labels).every(([key, value]) => digests.has(digestOf(key, value))),
  };
  return named.has({ [COMPUTER_LABELS.managed]: "true" }) ? named : undefined;
}
