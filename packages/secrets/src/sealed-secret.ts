import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import type { SecretKeyring } from "./secret-keyring.js";

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** One secret as the state store keeps it: nothing in it reads as the value. */
export interface SealedSecret {
  /** The secret's own data key, wrapped by the space's keyring for this secret alone. */
  readonly wrappedKey: string;
  /** base64url(nonce || AES-256-GCM ciphertext || tag) of the value. */
  readonly sealed: string;
  readonly origins: readonly string[];
  /** By the state store's clock. */
  readonly updatedAt: number;
}

/** Which secret a sealed value belongs to; all of it is bound into the seal. */
export interface SecretPlace {
  readonly workspaceId: string;
  /** `*` for the workspace's own, else `bot:<bot-id>`. */
  readonly scope: string;
  readonly name: string;
}

/**
 * Seals `value` under a fresh data key, which the keyring wraps for this
 * secret's place. The place and the origins are the cipher's associated
 * data: a sealed value copied to another name, bot or workspace, or given
 * wider origins by whoever can write the store, fails its tag.
 */
export async function sealSecret(
  keyring: SecretKeyring,
  place: SecretPlace,
  value: string,
  origins: readonly string[],
  updatedAt: number,
): Promise<SealedSecret> {
  const dataKey = randomBytes(32);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", dataKey, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(place, origins));
  const sealed = Buffer.concat([nonce, cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
  const wrappedKey = await keyring.wrap(new Uint8Array(dataKey), storageIdOf(place));
  dataKey.fill(0);
  return { wrappedKey, sealed: sealed.toString("base64url"), origins: [...origins], updatedAt };
}

/** The value inside `secret`; CHECKPOINT_CORRUPT (naming the secret, never a byte of it) when anything was altered. */
export async function openSecret(keyring: SecretKeyring, place: SecretPlace, secret: SealedSecret): Promise<string> {
  let dataKey: Uint8Array;
  try {
    dataKey = await keyring.unwrap(secret.wrappedKey, storageIdOf(place));
  } catch {
    throw unreadable(place, "its data key does not unwrap with this keyring (another space's key, or altered)");
  }
  const bytes = Buffer.from(String(secret.sealed), "base64url");
  if (bytes.length < NONCE_BYTES + TAG_BYTES) throw unreadable(place, "it is too short");
  const decipher = createDecipheriv("aes-256-gcm", dataKey, bytes.subarray(0, NONCE_BYTES), {
    authTagLength: TAG_BYTES,
  });
  decipher.setAAD(associatedData(place, secret.origins));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  try {
    const value = Buffer.concat([
      decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return value.toString("utf8");
  } catch {
    throw unreadable(place, "it fails its integrity check (moved, its origins changed, or altered)");
  } finally {
    dataKey.fill(0);
  }
}

/** The keyring's storage id for one secret: a digest, since workspace ids run to 128 characters. */
function storageIdOf(place: SecretPlace): string {
  const digest = createHash("sha256")
    .update(`agent-computer secret\0${place.workspaceId}\0${place.scope}\0${place.name}`)
    .digest("hex");
  return `secret-${digest.slice(0, 48)}`;
}

function associatedData(place: SecretPlace, origins: readonly string[]): Buffer {
  const originList = Array.isArray(origins) ? origins.map(String).join("\n") : "";
  return Buffer.from(
    `agent-computer secret v1\0${place.workspaceId}\0${place.scope}\0${place.name}\0${originList}`,
    "utf8",
  );
}

function unreadable(place: SecretPlace, reason: string): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The secret ${place.name} of workspace ${place.workspaceId} cannot be opened: ${reason}. Set it again.`,
    { details: { workspaceId: place.workspaceId, name: place.name } },
  );
}
