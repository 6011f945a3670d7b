import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import { z } from "zod";
import type { HomeKeyring } from "./home-keyring.js";

const FORMAT = "ac-wk1";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const DATA_KEY_BYTES = 32;

const contentKeySchema = z
  .custom<Uint8Array>((v) => v instanceof Uint8Array, { message: "expected a Uint8Array" })
  .refine((v) => v.byteLength === 32, { message: "expected 32 bytes (AES-256)" });
const storageIdSchema = z.string().min(1).max(128);

/**
 * A keyring holding one space's 32-byte content key in memory. A data key is
 * wrapped with AES-256-GCM under a fresh random nonce, with the key's id and
 * the home's storage id as associated data: a wrapped key copied to another
 * home, or opened with another space's content key, fails its tag.
 *
 * Wrapped form: `ac-wk1.<key-id>.<base64url(nonce(12) || ciphertext(32) || tag(16))>`.
 * The key id is a fingerprint (SHA-256 of a label and the key, 8 bytes), so
 * a wrong space is named as such without revealing the key.
 */
export class ContentKeyring implements HomeKeyring {
  /** The content key's fingerprint, written into every wrapped key. */
  readonly keyId: string;
  readonly #contentKey: Buffer;

  constructor(contentKey: Uint8Array) {
    const key = parseInput(contentKeySchema, contentKey, "ContentKeyring content key");
    this.#contentKey = Buffer.from(key);
    this.keyId = createHash("sha256")
      .update("agent-computer content key id\0")
      .update(this.#contentKey)
      .digest("hex")
      .slice(0, 16);
  }

  /**
   * The keyring of the content key in environment variable `variable`
   * (default `AGENT_COMPUTER_CONTENT_KEY`): 32 bytes as base64 or 64 hex digits.
   */
  static fromEnv(variable = "AGENT_COMPUTER_CONTENT_KEY", env: NodeJS.ProcessEnv = process.env): ContentKeyring {
    const text = env[variable]?.trim();
    if (!text)
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `The environment variable ${variable} is not set; set it to the space's 32-byte content key (base64 or hex).`,
      );
    const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
    // The value itself never goes into the message.
    if (bytes.length !== 32)
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `The environment variable ${variable} does not hold 32 bytes as base64 or 64 hex digits.`,
      );
    return new ContentKeyring(bytes);
  }

  async wrap(dataKey: Uint8Array, storageId: string): Promise<string> {
    if (!(dataKey instanceof Uint8Array) || dataKey.byteLength !== DATA_KEY_BYTES)
      throw new AgentComputerError("INVALID_ARGUMENT", "Invalid data key: expected 32 bytes.");
    const home = parseInput(storageIdSchema, storageId, "storage id");
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#contentKey, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.associatedData(home));
    const sealed = Buffer.concat([nonce, cipher.update(dataKey), cipher.final(), cipher.getAuthTag()]);
    return `${FORMAT}.${this.keyId}.${sealed.toString("base64url")}`;
  }

  async unwrap(wrapped: string, storageId: string): Promise<Uint8Array> {
    const home = parseInput(storageIdSchema, storageId, "storage id");
    const parts = typeof wrapped === "string" ? wrapped.split(".") : [];
    const [format, keyId, body] = parts;
    if (parts.length !== 3 || format !== FORMAT || keyId === undefined || body === undefined)
      throw unreadable(home, "it is not a wrapped data key of this format");
    if (keyId !== this.keyId)
      throw unreadable(home, `it was wrapped by another content key (${keyId}, this keyring holds ${this.keyId})`);
    const sealed = Buffer.from(body, "base64url");
    if (sealed.length !== NONCE_BYTES + DATA_KEY_BYTES + TAG_BYTES) throw unreadable(home, "it has the wrong length");
    const decipher = createDecipheriv("aes-256-gcm", this.#contentKey, sealed.subarray(0, NONCE_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(this.associatedData(home));
    decipher.setAuthTag(sealed.subarray(NONCE_BYTES + DATA_KEY_BYTES));
    const dataKey = decipher.update(sealed.subarray(NONCE_BYTES, NONCE_BYTES + DATA_KEY_BYTES));
    try {
      decipher.final();
    } catch {
      throw unreadable(home, "it fails its integrity check (another home's key, or altered)");
    }
    return new Uint8Array(dataKey);
  }

  private associatedData(storageId: string): Buffer {
    return Buffer.from(`agent-computer home data key v1\0${this.keyId}\0${storageId}`, "utf8");
  }
}

function unreadable(storageId: string, reason: string): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The data key of home storage "${storageId}" cannot be unwrapped: ${reason}. Its checkpoints are unreadable with this keyring.`,
    { details: { storageId } },
  );
}
