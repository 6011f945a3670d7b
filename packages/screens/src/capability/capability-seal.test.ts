import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CapabilitySeal, MAX_SEALED_LENGTH } from "./capability-seal.js";
import type { SealedCapability } from "./sealed-capability.js";

const capability: SealedCapability = {
  id: "cap-1",
  computerId: "team-1",
  botId: "bot-1",
  mode: "control",
  expiresAt: 1_900_000_000_000,
  endpoint: {
    id: "ep-1",
    url: "ws://10.1.2.3:7000/screens/ep-1",
    token: "super-secret-token",
    expiresAt: 1_900_000_000_000,
  },
  control: {
    kind: "user-control",
    key: "team-1/bot-1",
    holder: "person-1",
    token: 4,
    computerId: "team-1",
    botId: "bot-1",
    ttlMs: 60_000,
    grantedAt: 1_899_999_000_000.5,
    expiresAt: 1_900_000_060_000.5,
  },
};

describe("CapabilitySeal", () => {
  const seal = new CapabilitySeal(randomBytes(32));

  it("round-trips, with a fresh nonce every time, and hides everything inside", () => {
    const a = seal.seal(capability);
    const b = seal.seal(capability);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(seal.open(a)).toEqual(capability);
    expect(seal.open(b)).toEqual(capability);
    const bytes = Buffer.from(a, "base64url").toString("latin1");
    for (const secret of ["super-secret-token", "10.1.2.3", "ws://", "team-1", "person-1"])
      expect(bytes).not.toContain(secret);
  });

  it("refuses every altered byte: version, nonce, ciphertext and tag", () => {
    const bytes = Buffer.from(seal.seal(capability), "base64url");
    for (let i = 0; i < bytes.length; i++) {
      const altered = Buffer.from(bytes);
      altered[i]! ^= 0x01;
      expect(seal.open(altered.toString("base64url")), `byte ${i}`).toBeUndefined();
    }
  });

  it("refuses truncated, extended and re-encoded blobs", () => {
    const sealed = seal.seal(capability);
    for (const cut of [1, 2, 16, 17, sealed.length - 1]) expect(seal.open(sealed.slice(0, -cut))).toBeUndefined();
    expect(seal.open(`${sealed}A`)).toBeUndefined();
    expect(seal.open(`${sealed}=`)).toBeUndefined();
    expect(seal.open(sealed.replace(/-/g, "+"))).toBeUndefined();
    expect(seal.open("")).toBeUndefined();
    expect(seal.open("A".repeat(MAX_SEALED_LENGTH + 1))).toBeUndefined();
  });

  it("refuses a blob made under another secret, or forged without one", () => {
    expect(seal.open(new CapabilitySeal(randomBytes(32)).seal(capability))).toBeUndefined();
    const forged = Buffer.concat([
      Buffer.of(1),
      randomBytes(12),
      Buffer.from(JSON.stringify(capability)),
      randomBytes(16),
    ]);
    expect(seal.open(forged.toString("base64url"))).toBeUndefined();
  });

  it("refuses a genuine seal whose payload has the wrong shape", () => {
    const wrong = { ...capability, control: undefined } as unknown as SealedCapability;
    expect(seal.open(seal.seal(wrong))).toBeUndefined();
    const badUrl = { ...capability, endpoint: { ...capability.endpoint, url: "http://x/" } };
    expect(seal.open(seal.seal(badUrl))).toBeUndefined();
  });
});
