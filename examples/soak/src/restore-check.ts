import { performance } from "node:perf_hooks";
import type { AgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef, SandboxProvider } from "@agent-computer/core";
import type { ComputerRecord } from "@agent-computer/leases";

/** How restoring the last checkpoint into a new computer went. */
export interface RestoreResult {
  readonly ok: boolean;
  /** The revision the home store restored, and the one the computer's record committed. */
  readonly restoredRevision: number | undefined;
  readonly committedRevision: number;
  /** The new computer's home key. */
  readonly homeKey: string;
  readonly files: number;
  readonly matched: number;
  /** Paths that were missing or differed (the first 20). */
  readonly mismatched: readonly string[];
  readonly ms: number;
  readonly error?: string;
}

/**
 * Restores the computer's latest checkpoint into a NEW computer on a NEW
 * home key (the home store's restore into the machine, as the runtime's
 * replacement path does; a mounted home imports while stopped, as in the
 * quickstart's home move), then reads back every file the harness wrote
 * and compares it with what it wrote before that checkpoint.
 */
export async function restoreIntoNewComputer(input: {
  provider: SandboxProvider;
  homeStore: AgentHomeStore;
  record: ComputerRecord;
  expected: ReadonlyMap<string, string>;
}): Promise<RestoreResult> {
  const { provider, homeStore, record, expected } = input;
  const started = performance.now();
  const homeKey = `${record.homeKey}-restored`;
  const mismatched: string[] = [];
  let matched = 0;
  let restoredRevision: number | undefined;
  let target: Machine | undefined;
  const result = (error?: string): RestoreResult => ({
    ok: error === undefined && mismatched.length === 0 && restoredRevision === record.revision,
    restoredRevision,
    committedRevision: record.revision,
    homeKey,
    files: expected.size,
    matched,
    mismatched: mismatched.slice(0, 20),
    ms: Math.round(performance.now() - started),
    ...(error === undefined ? {} : { error }),
  });
  try {
    target = await provider.provision({
      computerId: `${record.computerId}-restored`,
      homeKey,
      labels: { app: "agent-computer-soak" },
    });
    const mounted = provider.capabilities.mountedHome;
    if (mounted) await target.stop();
    const restored = await homeStore.restore({
      homeKey: record.homeKey,
      target: { machine: target },
      committedRevision: record.revision,
    });
    restoredRevision = restored?.revision;
    if (mounted) {
      const again = await provider.reconnect(target.ref as ProviderRef);
      if (again === "gone") return result("the restored computer vanished after its import");
      target = again;
    }
    const decoder = new TextDecoder();
    for (const [path, content] of expected) {
      const found = await target.files.read(path, undefined, { maxBytes: 4 * 1024 * 1024 }).then(
        (bytes) => decoder.decode(bytes),
        () => undefined,
      );
      if (found === content) matched++;
      else mismatched.push(found === undefined ? `${path} (missing)` : path);
    }
    return result();
  } catch (error) {
    return result(error instanceof Error ? error.message : String(error));
  } finally {
    await target?.destroy().catch(() => {});
  }
}
