import { randomBytes } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { ContentKeyring } from "@agent-computer/home-store-s3";
import { MemoryStateStore } from "@agent-computer/leases";
import { describe, expect, it } from "vitest";
import { SecretVault } from "./secret-vault.js";
import { staticSecretSource } from "./static-secret-source.js";

const PASSWORD = "hunter2-correct-horse";

function vaultWith(store = new MemoryStateStore(), keyring = new ContentKeyring(randomBytes(32))) {
  return { store, keyring, vault: new SecretVault({ store, keyring }) };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!AgentComputerError.is(error)) throw new Error(`expected an AgentComputerError, got ${String(error)}`);
  expect(error.message).not.toContain(PASSWORD);
  expect(JSON.stringify(error.toJSON())).not.toContain(PASSWORD);
  return error.code;
}

describe("SecretVault", () => {
  it("keeps values sealed: list tells names and origins, the store holds no value, resolve opens it", async () => {
    const { store, vault } = vaultWith();
    await vault.set({ workspaceId: "w1", name: "github", value: PASSWORD, origins: ["https://github.com/"] });
    expect(await vault.list({ workspaceId: "w1" })).toEqual([
      { name: "github", origins: ["https://github.com"], updatedAt: expect.any(Number) },
    ]);
    const record = (await store.read(["secrets/w1"])).get("secrets/w1");
    expect(JSON.stringify(record)).not.toContain(PASSWORD);
    expect(JSON.stringify(record)).not.toContain(Buffer.from(PASSWORD).toString("base64"));
    expect(await vault.resolve({ workspaceId: "w1", botId: "alice", name: "github" })).toEqual({
      name: "github",
      value: PASSWORD,
      origins: ["https://github.com"],
    });
  });

  it("a bot's own secret overrides the workspace's of the same name, for that bot only", async () => {
    const { vault } = vaultWith();
    await vault.set({ workspaceId: "w1", name: "mail", value: "team-value", origins: ["https://mail.example"] });
    await vault.set({
      workspaceId: "w1",
      botId: "alice",
      name: "mail",
      value: "alice-value",
      origins: ["https://mail.example"],
    });
    expect((await vault.resolve({ workspaceId: "w1", botId: "alice", name: "mail" })).value).toBe("alice-value");
    expect((await vault.resolve({ workspaceId: "w1", botId: "bob", name: "mail" })).value).toBe("team-value");
    expect((await vault.list({ workspaceId: "w1", botId: "alice" })).map((s) => s.botId ?? "*")).toEqual([
      "*",
      "alice",
    ]);
    expect((await vault.list({ workspaceId: "w1", botId: "bob" })).map((s) => s.botId ?? "*")).toEqual(["*"]);
    expect(await codeOf(vault.resolve({ workspaceId: "w2", botId: "alice", name: "mail" }))).toBe("NOT_FOUND");
  });

  it("rotates by setting again and removes by name", async () => {
    const { vault } = vaultWith();
    await vault.set({ workspaceId: "w1", name: "api", value: "old-token", origins: ["https://api.example"] });
    await vault.set({ workspaceId: "w1", name: "api", value: PASSWORD, origins: ["https://api.example:8443"] });
    expect(await vault.resolve({ workspaceId: "w1", botId: "b", name: "api" })).toMatchObject({
      value: PASSWORD,
      origins: ["https://api.example:8443"],
    });
    expect(await vault.remove({ workspaceId: "w1", name: "api" })).toBe(true);
    expect(await vault.remove({ workspaceId: "w1", name: "api" })).toBe(false);
    expect(await codeOf(vault.resolve({ workspaceId: "w1", botId: "b", name: "api" }))).toBe("NOT_FOUND");
  });

  it("refuses a sealed value whose origins were widened, that was moved to another name, or another space's keyring", async () => {
    const { store, keyring, vault } = vaultWith();
    await vault.set({ workspaceId: "w1", name: "github", value: PASSWORD, origins: ["https://github.com"] });
    const tamper = async (change: (secrets: Record<string, Record<string, unknown>>) => void) => {
      const record = (await store.read(["secrets/w1"])).get("secrets/w1");
      if (!record) throw new Error("no record");
      const secrets = structuredClone(record.value.secrets) as Record<string, Record<string, unknown>>;
      change(secrets);
      const ok = await store.commit(
        [{ key: record.key, version: record.version }],
        [{ key: record.key, version: record.version + 1, value: { secrets } }],
      );
      expect(ok).toBe(true);
    };
    await tamper((s) => {
      (s["*/github"] as { origins: string[] }).origins.push("https://evil.example");
    });
    expect(await codeOf(vault.resolve({ workspaceId: "w1", botId: "b", name: "github" }))).toBe("CHECKPOINT_CORRUPT");

    await vault.set({ workspaceId: "w1", name: "github", value: PASSWORD, origins: ["https://github.com"] });
    await tamper((s) => {
      s["*/other"] = s["*/github"] as Record<string, unknown>;
    });
    expect(await codeOf(vault.resolve({ workspaceId: "w1", botId: "b", name: "other" }))).toBe("CHECKPOINT_CORRUPT");

    const otherSpace = new SecretVault({ store, keyring: new ContentKeyring(randomBytes(32)) });
    expect(await codeOf(otherSpace.resolve({ workspaceId: "w1", botId: "b", name: "github" }))).toBe(
      "CHECKPOINT_CORRUPT",
    );
    // The right keyring still opens what nobody altered.
    expect(
      (await new SecretVault({ store, keyring }).resolve({ workspaceId: "w1", botId: "b", name: "github" })).value,
    ).toBe(PASSWORD);
  });

  it("refuses bad input without echoing the value", async () => {
    const { vault } = vaultWith();
    const set = (origins: string[], value = PASSWORD, name = "github") =>
      vault.set({ workspaceId: "w1", name, value, origins });
    expect(await codeOf(set(["https://github.com/login"]))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(set(["javascript:alert(1)"]))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(set(["https://user:pw@github.com"]))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(set([]))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(set(["https://github.com"], PASSWORD.repeat(300)))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(set(["https://github.com"], PASSWORD, "Has Spaces"))).toBe("INVALID_ARGUMENT");
    expect(await vault.list({ workspaceId: "w1" })).toEqual([]);
  });

  it("two writers at once both land (compare-and-set, read again on a lost race)", async () => {
    const { vault } = vaultWith();
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        vault.set({ workspaceId: "w1", name: `s${i}`, value: `v${i}`, origins: ["https://a.example"] }),
      ),
    );
    expect((await vault.list({ workspaceId: "w1" })).map((s) => s.name)).toEqual(["s0", "s1", "s2", "s3", "s4", "s5"]);
  });
});

describe("staticSecretSource", () => {
  it("resolves by name for any bot, refuses bad entries without echoing a value, and names only names", async () => {
    const source = staticSecretSource({ github: { value: PASSWORD, origins: ["https://github.com/"] } });
    expect(source.names).toEqual(["github"]);
    expect(await source.resolve({ workspaceId: "w", botId: "b", name: "github" })).toEqual({
      name: "github",
      value: PASSWORD,
      origins: ["https://github.com"],
    });
    expect(await codeOf(source.resolve({ workspaceId: "w", botId: "b", name: "mail" }))).toBe("NOT_FOUND");
    const refusal = (entries: Record<string, { value: string; origins: string[] }>) =>
      codeOf(Promise.resolve().then(() => staticSecretSource(entries)));
    expect(await refusal({ github: { value: PASSWORD, origins: ["https://github.com/login"] } })).toBe(
      "INVALID_ARGUMENT",
    );
    expect(await refusal({ "Not A Name": { value: PASSWORD, origins: ["https://github.com"] } })).toBe(
      "INVALID_ARGUMENT",
    );
    expect(await refusal({ github: { value: PASSWORD.repeat(300), origins: ["https://github.com"] } })).toBe(
      "INVALID_ARGUMENT",
    );
  });
});
