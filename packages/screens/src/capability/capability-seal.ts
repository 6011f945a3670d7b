import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { z } from "zod";
import { type SealedCapability, sealedCapabilitySchema } from "./sealed-capability.js";

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const AAD_LABEL = "agent-computer/screens capability";

/** The longest sealed blob `open` reads; anything longer is refused unread. */
export const MAX_SEALED_LENGTH = 4096;

/**
 * Seals capabilities for a browser to carry: AES-256-GCM under a key derived
 * (HKDF-SHA256) from the app's 32-byte secret, a random 12-byte nonce per
 * seal, and associated data that binds the format version, so a blob cut
 * short, altered, made under another secret or relabelled as another
 * version does not open. base64url: `version || nonce || ciphertext || tag`.
 */
export class CapabilitySeal {
  private readonly key: Buffer;

  /**
   * `label` separates kinds of capability sealed under one secret (the
   * files service uses its own): a blob of one kind never opens as another.
   */
  constructor(
    secret: Uint8Array,
    private readonly label: string = AAD_LABEL,
  ) {
    this.key = Buffer.from(hkdfSync("sha256", secret, label, `seal v${VERSION}`, 32));
  }

  seal(capability: SealedCapability | object): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(aad(this.label, VERSION));
    const body = Buffer.concat([cipher.update(JSON.stringify(capability), "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, body, cipher.getAuthTag()]).toString("base64url");
  }

  /**
   * The capability inside `sealed`, or undefined when it does not open
   * (wrong characters or length, another version, tampered, truncated,
   * another secret, or a payload of the wrong shape). Does not look at
   * expiry or revocation.
   */
  open(sealed: string): SealedCapability | undefined {
    return this.openAs(sealed, sealedCapabilitySchema) as SealedCapability | undefined;
  }

  /** `open`, with the payload checked against `schema` instead of a screen capability's. */
  openAs<T>(sealed: string, schema: z.ZodType<T>): T | undefined {
    if (sealed.length > MAX_SEALED_LENGTH || !/^[A-Za-z0-9_-]+$/.test(sealed)) return undefined;
    const bytes = Buffer.from(sealed, "base64url");
    // Re-encoding catches stray trailing bits that base64url decoding ignores.
    if (bytes.toString("base64url") !== sealed) return undefined;
    if (bytes.length < 1 + NONCE_BYTES + 1 + TAG_BYTES || bytes[0] !== VERSION) return undefined;
    const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
    const tag = bytes.subarray(bytes.length - TAG_BYTES);
    const body = bytes.subarray(1 + NONCE_BYTES, bytes.length - TAG_BYTES);
    let json: string;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(this.label, VERSION));
      decipher.setAuthTag(tag);
      json = Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
    } catch {
      return undefined;
    }
    try {
      const parsed = schema.safeParse(JSON.parse(json));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }
}

function aad(label: string, version: number): Buffer {
  return Buffer.concat([Buffer.from(label, "utf8"), Buffer.of(version)]);
}
