import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { CliError } from "./cli-error.js";

/**
 * VNC Authentication (RFB security type 2), the password the gateway alone
 * holds for its x11vnc (docs/architecture.md §4, "Whose input a display
 * takes", item 2). The client answers a 16-byte challenge with it
 * DES-encrypted under the password, whose 8 key bytes VNC uses bit-reversed;
 * `-rfbauth` files hold the password DES-encrypted under a fixed key that
 * every VNC implementation shares (an obfuscation, not a protection: the
 * file's mode and folder are what keep it).
 */
export const VNC_AUTH = 2;
export const VNC_CHALLENGE_BYTES = 16;
export const VNC_PASSWORD_BYTES = 8;

/** The fixed key of `-rfbauth` files, as VNC writes it (before bit reversal). */
const PASSWORD_FILE_KEY = Buffer.from([23, 82, 107, 6, 35, 78, 88, 7]);

/**
 * A fresh password: 8 random bytes, none zero (x11vnc reads the file's
 * password as a C string, so a zero byte would cut it short).
 */
export function newVncPassword(): Buffer {
  const password = Buffer.alloc(VNC_PASSWORD_BYTES);
  let filled = 0;
  while (filled < VNC_PASSWORD_BYTES) {
    for (const byte of randomBytes(VNC_PASSWORD_BYTES)) {
      if (byte !== 0 && filled < VNC_PASSWORD_BYTES) password[filled++] = byte;
    }
  }
  return password;
}

/** The client's answer to a challenge. */
export function vncAuthResponse(password: Buffer, challenge: Buffer): Buffer {
  if (challenge.length !== VNC_CHALLENGE_BYTES) throw new Error("A VNC challenge is 16 bytes.");
  return des("encrypt", vncKey(password), challenge);
}

/** The contents of an `-rfbauth` file for `password`. */
export function vncPasswordFile(password: Buffer): Buffer {
  return des("encrypt", vncKey(PASSWORD_FILE_KEY), padded(password));
}

/** The password an `-rfbauth` file holds. */
export function passwordOfVncFile(contents: Buffer): Buffer {
  if (contents.length < VNC_PASSWORD_BYTES) throw new Error("An -rfbauth file holds at least 8 bytes.");
  return des("decrypt", vncKey(PASSWORD_FILE_KEY), contents.subarray(0, VNC_PASSWORD_BYTES));
}

/** VNC's DES key: the password's first 8 bytes (zero-padded), each byte's bits reversed. */
function vncKey(password: Buffer): Buffer {
  return Buffer.from([...padded(password)].map(reverseBits));
}

function padded(password: Buffer): Buffer {
  const out = Buffer.alloc(VNC_PASSWORD_BYTES);
  password.copy(out, 0, 0, VNC_PASSWORD_BYTES);
  return out;
}

function reverseBits(byte: number): number {
  let out = 0;
  for (let bit = 0; bit < 8; bit++) out |= ((byte >> bit) & 1) << (7 - bit);
  return out;
}

/**
 * Single DES in ECB mode. OpenSSL 3 moved `des-ecb` to its legacy provider,
 * which the image's Node 18 does not load ("unsupported"); triple DES is in
 * the default one, and with its three keys equal it is single DES
 * (encrypt, decrypt, encrypt under one key = encrypt once).
 */
function des(direction: "encrypt" | "decrypt", key: Buffer, data: Buffer): Buffer {
  const tripled = Buffer.concat([key, key, key]);
  try {
    const cipher =
      direction === "encrypt" ? createCipheriv("des-ede3", tripled, null) : createDecipheriv("des-ede3", tripled, null);
    cipher.setAutoPadding(false);
    return Buffer.concat([cipher.update(data), cipher.final()]);
  } catch (error) {
    throw new CliError(
      "UNAVAILABLE",
      `This computer's Node cannot compute DES, which the screen servers' password needs: ${(error as Error).message}`,
    );
  }
}
