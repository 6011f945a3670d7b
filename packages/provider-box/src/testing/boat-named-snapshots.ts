import type { ComputerContainers } from "@agent-computer/testing/emulator";
import { fail, type SandboxRecord } from "./boat-sandboxes.js";

type Json = Record<string, unknown>;

/** boat-v1.yaml op:saveNamedSnapshot: at most ten per account (409 `named_snapshot_limit`). */
const MOST_NAMED_SNAPSHOTS = 10;

interface Saved {
  name: string;
  status: "saving" | "ready" | "failed";
  sourceSandboxId: string;
  createdAt: string;
  image: string;
  error?: string;
}

/**
 * Named snapshots as boat-v1.yaml states them: saved from a sandbox by
 * `POST /named-snapshots { sandboxId, name }` (202, `saving`, then `ready`
 * or `failed`), read by name or listed newest first, deleted by name;
 * independent of the sandbox they came from. A running sandbox's disk is
 * committed; an archived one's archive is used.
 */
export class NamedSnapshots {
  private readonly saved = new Map<string, Saved>();
  private readonly saving = new Set<Promise<unknown>>();

  constructor(
    private readonly containers: ComputerContainers,
    /** Snapshots the account already has: name to image. */
    private readonly preset: Record<string, string>,
  ) {}

  /** The image a create `from` a name starts from; undefined when there is no ready snapshot of it. */
  imageOf(name: string): string | undefined {
    const found = this.saved.get(name);
    return found?.status === "ready" ? found.image : this.preset[name];
  }

  get(name: string): { status: string; sourceSandboxId: string } | undefined {
    const found = this.saved.get(name);
    return found ? { status: found.status, sourceSandboxId: found.sourceSandboxId } : undefined;
  }

  /** Resolves once every save under way ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.saving]);
  }

  route(
    method: string,
    name: string | undefined,
    body: Json,
    sandboxOf: (id: string) => SandboxRecord | undefined,
  ): [number, Json] {
    if (name === undefined && method === "GET") {
      const snapshots = [...this.saved.values()].reverse().map(view);
      return [200, { type: "snapshot.named.list", snapshots }];
    }
    if (name === undefined && method === "POST") return this.save(body, sandboxOf);
    const found = name === undefined ? undefined : this.saved.get(name);
    if (!found) throw fail(404, "not_found", "not_found");
    if (method === "GET") return [200, { type: "snapshot.named.info", snapshot: view(found) }];
    if (method === "DELETE") {
      if (found.status === "saving") throw fail(409, "save_in_progress", "a save under this name is running");
      this.saved.delete(found.name);
      return [200, { type: "snapshot.named.deleted", name: found.name, status: "deleted" }];
    }
    throw fail(404, "not_found", `no route ${method} /named-snapshots/${name}`);
  }

  private async tagged(image: string, tag: string): Promise<string> {
    const repo = `agent-computer-test/boat-emulator-named-${this.containers.instance}`;
    await this.containers.docker.getImage(image).tag({ repo, tag });
    return `${repo}:${tag}`;
  }

  private save(body: Json, sandboxOf: (id: string) => SandboxRecord | undefined): [number, Json] {
    const name = body.name as string;
    const sandbox = sandboxOf(body.sandboxId as string);
    if (!sandbox) throw fail(404, "not_found", "not_found");
    const earlier = this.saved.get(name);
    if (earlier?.status === "saving") throw fail(409, "save_in_progress", "a save under this name is running");
    if (!earlier && this.saved.size >= MOST_NAMED_SNAPSHOTS) {
      throw fail(409, "named_snapshot_limit", `at most ${MOST_NAMED_SNAPSHOTS} named snapshots: delete one first`);
    }
    const source = sandbox.containerId ?? sandbox.archiveImage;
    if (!source) throw fail(409, "save_in_progress", `the sandbox is ${sandbox.state}; save again once it settles`);
    const record: Saved = {
      name,
      status: "saving",
      sourceSandboxId: sandbox.id,
      createdAt: new Date().toISOString(),
      image: earlier?.image ?? "",
    };
    this.saved.set(name, record);
    // A re-save replaces the artifact once the new one is ready; an archived sandbox's archive gets a
    // name of its own, so the snapshot outlives the sandbox's deletion (the definition: independent of it).
    const made = sandbox.containerId
      ? this.containers.snapshot(sandbox.containerId, `named-${name}`)
      : this.tagged(sandbox.archiveImage as string, `named-${name}`);
    const done = made.then(
      (image) => Object.assign(record, { image, status: "ready" }),
      (error: Error) => Object.assign(record, { status: "failed", error: error.message }),
    );
    this.saving.add(done);
    void done.finally(() => this.saving.delete(done));
    return [202, { type: "snapshot.named.saving", status: "saving", snapshot: view(record) }];
  }
}

/** NamedSnapshot as the definition gives it (`snapshotId` once ready). */
function view(saved: Saved): Json {
  return {
    name: saved.name,
    status: saved.status,
    sourceSandboxId: saved.sourceSandboxId,
    type: "default",
    createdAt: saved.createdAt,
    ...(saved.status === "ready" ? { snapshotId: `snap-${saved.name}` } : {}),
    ...(saved.status === "failed" ? { error: saved.error ?? "the save failed" } : {}),
  };
}
