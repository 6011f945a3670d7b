import { AgentComputerError, type PageSecretText, parseInput } from "@agent-computer/core";
import type { StateStore, VersionedRecord } from "@agent-computer/leases";
import { openSecret, type SealedSecret, type SecretPlace, sealSecret } from "./sealed-secret.js";
import {
  type SecretAddress,
  type SecretInput,
  secretAddressSchema,
  secretInputSchema,
  secretListSchema,
  secretLookupSchema,
} from "./secret-inputs.js";
import type { SecretKeyring } from "./secret-keyring.js";

/** Options of `SecretVault`. */
export interface SecretVaultOptions {
  /** Where the sealed secrets live: the runtime's own state store. */
  readonly store: StateStore;
  /** Seals each secret's data key: the space's content keyring (or a KMS). */
  readonly keyring: SecretKeyring;
}

/** What `list` tells about a secret: never its value. */
export interface SecretSummary {
  readonly name: string;
  /** Set for a bot's own secret; absent for the workspace's. */
  readonly botId?: string;
  readonly origins: readonly string[];
  readonly updatedAt: number;
}

type Entries = Record<string, SealedSecret>;

/** Lost compare-and-sets in a row before a write gives up (another writer keeps winning). */
const MAX_ATTEMPTS = 8;
const WORKSPACE_SCOPE = "*";

/**
 * Named secrets per workspace and per bot, each sealed in the state store
 * (one record per workspace, `secrets/<workspace-id>`). The app sets,
 * rotates (sets again) and removes them by name; `list` tells names and
 * origins; only `resolve`, which the runtime calls to type a secret into a
 * page, opens a value. No method returns a value to anything the model
 * reads, and no error carries one.
 */
export class SecretVault {
  readonly #store: StateStore;
  readonly #keyring: SecretKeyring;

  constructor(options: SecretVaultOptions) {
    this.#store = options.store;
    this.#keyring = options.keyring;
  }

  /** Adds the secret, or replaces its value and origins (a rotation). */
  async set(input: SecretInput): Promise<void> {
    const secret = parseInput(secretInputSchema, input, "secret");
    const place = placeOf(secret);
    await this.#update(secret.workspaceId, async (entries) => {
      const now = await this.#store.now();
      entries[entryKey(place)] = await sealSecret(this.#keyring, place, secret.value, secret.origins, now);
      return true;
    });
  }

  /** Removes the secret; false when there was none. */
  async remove(address: SecretAddress): Promise<boolean> {
    const where = parseInput(secretAddressSchema, address, "secret address");
    const key = entryKey(placeOf(where));
    return this.#update(where.workspaceId, async (entries) => {
      if (!(key in entries)) return false;
      delete entries[key];
      return true;
    });
  }

  /** The workspace's secrets and, given `botId`, that bot's own: names and origins, sorted by name. */
  async list(input: { workspaceId: string; botId?: string }): Promise<SecretSummary[]> {
    const { workspaceId, botId } = parseInput(secretListSchema, input, "secret list");
    const entries = (await this.#read(workspaceId)).entries;
    const out: SecretSummary[] = [];
    for (const [key, secret] of Object.entries(entries)) {
      const [scope, name] = splitKey(key);
      if (scope !== WORKSPACE_SCOPE && scope !== `bot:${botId}`) continue;
      out.push({
        name,
        ...(scope === WORKSPACE_SCOPE ? {} : { botId }),
        origins: [...secret.origins],
        updatedAt: secret.updatedAt,
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name) || (a.botId ? 1 : 0) - (b.botId ? 1 : 0));
  }

  /**
   * The value a bot may type: its own secret of that name, else the
   * workspace's. NOT_FOUND names the secret only. For the runtime's page
   * tools; an app never needs it.
   */
  async resolve(input: { workspaceId: string; botId: string; name: string }): Promise<PageSecretText> {
    const { workspaceId, botId, name } = parseInput(secretLookupSchema, input, "secret lookup");
    const { entries } = await this.#read(workspaceId);
    for (const place of [
      { workspaceId, scope: `bot:${botId}`, name },
      { workspaceId, scope: WORKSPACE_SCOPE, name },
    ]) {
      const secret = entries[entryKey(place)];
      if (secret) return { name, value: await openSecret(this.#keyring, place, secret), origins: [...secret.origins] };
    }
    throw new AgentComputerError(
      "NOT_FOUND",
      `There is no secret named ${name} for bot ${botId} in workspace ${workspaceId}; ask the app's owner to add it.`,
    );
  }

  async #read(workspaceId: string): Promise<{ record?: VersionedRecord; entries: Entries }> {
    const record = (await this.#store.read([recordKey(workspaceId)])).get(recordKey(workspaceId));
    const entries = (record?.value.secrets ?? {}) as Entries;
    return { ...(record ? { record } : {}), entries: { ...entries } };
  }

  /** Read, change, compare-and-set; again while another writer wins. */
  async #update(workspaceId: string, change: (entries: Entries) => Promise<boolean>): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { record, entries } = await this.#read(workspaceId);
      if (!(await change(entries))) return false;
      const key = recordKey(workspaceId);
      const version = record ? record.version + 1 : 1;
      const written = await this.#store.commit(
        [{ key, version: record?.version ?? null }],
        [{ key, version, value: { secrets: entries } }],
      );
      if (written) return true;
    }
    throw new AgentComputerError(
      "CONFLICT",
      `The secrets of workspace ${workspaceId} kept changing under this write; try again.`,
    );
  }
}

function placeOf(address: { workspaceId: string; botId?: string | undefined; name: string }): SecretPlace {
  return {
    workspaceId: address.workspaceId,
    scope: address.botId === undefined ? WORKSPACE_SCOPE : `bot:${address.botId}`,
    name: address.name,
  };
}

const recordKey = (workspaceId: string) => `secrets/${workspaceId}`;
const entryKey = (place: SecretPlace) => `${place.scope}/${place.name}`;

function splitKey(key: string): [string, string] {
  const slash = key.lastIndexOf("/");
  return [key.slice(0, slash), key.slice(slash + 1)];
}
