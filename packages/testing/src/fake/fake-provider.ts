import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import {
  AgentComputerError,
  type ComputerSpec,
  checkOpContext,
  computerSpecSchema,
  type ListFilter,
  listFilterSchema,
  type OpContext,
  type ProviderCapabilities,
  type ProviderRef,
  parseInput,
  providerCapabilitiesSchema,
  providerRefId,
  type ResolvedComputerSpec,
  throwIfDone,
} from "@agent-computer/core";
import { z } from "zod";
import { FakeGateway } from "./fake-gateway.js";
import { FakeMachine, type FakeMachineHost } from "./fake-machine.js";
import type { FakeMachineState } from "./fake-machine-state.js";

const fakeProviderOptionsSchema = z.object({
  /**
   * Folder that holds the machines and homes. Two providers with the same
   * root see the same machines. Default: a new temporary folder.
   */
  root: z.string().min(1).optional(),
  /** Overrides of the default capabilities, to exercise other contract paths. */
  capabilities: providerCapabilitiesSchema.partial().optional(),
  /**
   * Whether desktops have live screens and terminals through the loopback
   * gateway (default true). false: screenEndpoint is UNSUPPORTED and there
   * is no terminal, as on a provider without a gateway.
   */
  liveScreens: z.boolean().default(true),
  /** Size of the fake desktops (default 640x400). */
  screen: z
    .object({ width: z.number().int().min(16).max(4096), height: z.number().int().min(16).max(4096) })
    .optional(),
});

export type FakeProviderOptions = z.input<typeof fakeProviderOptionsSchema>;

/**
 * Desktop yes (drawn in memory) with the emulator as its page browser; live
 * screens (RFB of the drawn screen) and a simulated shell as the terminal,
 * through a loopback gateway (fake-gateway.ts). Stop keeps the machine; the
 * home is private.
 */
export const FAKE_DEFAULT_CAPABILITIES: ProviderCapabilities = {
  desktop: true,
  multiScreen: true,
  pageBrowser: true,
  terminal: true,
  billsWhileRunning: false,
  stopKeepsMachine: true,
  mountedHome: false,
};

interface StoredMachine {
  id: string;
  spec: ResolvedComputerSpec;
  homeDir: string;
  status: "running" | "stopped";
}

/**
 * An in-process provider for tests and for the quickstart where Docker is
 * absent. Machines run commands with this host's /bin/sh in a private
 * folder: it is NOT a security boundary.
 */
export function createFakeProvider(
  options: FakeProviderOptions = {},
): SandboxProvider & { readonly root: Promise<string> } {
  const parsed = parseInput(fakeProviderOptionsSchema, options, "FakeProviderOptions");
  const capabilities: ProviderCapabilities = {
    ...FAKE_DEFAULT_CAPABILITIES,
    ...(parsed.liveScreens ? {} : { terminal: false }),
    ...parsed.capabilities,
  };
  const root = (async () => {
    const dir = parsed.root ?? (await mkdtemp(join(tmpdir(), "agent-computer-fake-")));
    await mkdir(join(dir, "machines"), { recursive: true });
    return dir;
  })();
  const live = new Map<string, FakeMachineState>();
  const gateway = parsed.liveScreens ? new FakeGateway() : undefined;

  const recordPath = async (id: string) => join(await root, "machines", `${id}.json`);
  const host: FakeMachineHost = {
    capabilities,
    screen: parsed.screen ?? { width: 640, height: 400 },
    ...(gateway ? { gateway } : {}),
    async save(state) {
      const stored: StoredMachine = {
        id: state.id,
        spec: state.spec,
        homeDir: state.homeDir,
        status: state.status as StoredMachine["status"],
      };
      await writeFile(await recordPath(state.id), JSON.stringify(stored));
    },
    async remove(state) {
      live.delete(state.id);
      await rm(await recordPath(state.id), { force: true });
    },
  };

  async function load(id: string): Promise<FakeMachineState | undefined> {
    // The record on disk is the truth: another provider instance on the same
    // root may have destroyed the machine.
    const text = await readFile(await recordPath(id), "utf8").catch(() => undefined);
    const known = live.get(id);
    if (text === undefined) {
      if (known) known.status = "destroyed";
      return undefined;
    }
    if (known) return known.status === "destroyed" ? undefined : known;
    const stored = JSON.parse(text) as StoredMachine;
    const state: FakeMachineState = { ...stored, processGroups: new Set(), desktops: new Map(), quiesced: false };
    live.set(id, state);
    return state;
  }

  return {
    specificationVersion: "v1",
    kind: "fake",
    capabilities,
    root,

    async provision(spec: ComputerSpec, ctx?: OpContext): Promise<Machine> {
      const resolved = parseInput(computerSpecSchema, spec, "ComputerSpec");
      // A folder of this host fences nothing: a policy is refused, as defineSandboxProvider refuses it.
      if (resolved.egress) {
        throw new AgentComputerError("UNSUPPORTED", "The fake provider does not enforce egress policies.");
      }
      throwIfDone(checkOpContext(ctx), "provision");
      const id = randomUUID();
      const base = await root;
      const homeDir = capabilities.mountedHome
        ? join(base, "homes", resolved.homeKey)
        : join(base, "machines", id, "home");
      await mkdir(homeDir, { recursive: true });
      const state: FakeMachineState = {
        id,
        spec: resolved,
        homeDir,
        status: "running",
        processGroups: new Set(),
        desktops: new Map(),
        quiesced: false,
      };
      live.set(id, state);
      await host.save(state);
      return new FakeMachine(state, host);
    },

    async reconnect(ref: ProviderRef, ctx?: OpContext): Promise<Machine | "gone"> {
      const id = providerRefId(ref, "fake");
      throwIfDone(checkOpContext(ctx), "reconnect");
      const state = await load(id);
      if (!state) return "gone";
      if (state.status === "stopped") {
        state.status = "running";
        await host.save(state);
      }
      return new FakeMachine(state, host);
    },

    async list(filter: ListFilter, ctx?: OpContext): Promise<ProviderRef[]> {
      const { labels, running } = parseInput(listFilterSchema, filter, "ListFilter");
      throwIfDone(checkOpContext(ctx), "list");
      const refs: ProviderRef[] = [];
      for (const file of (await readdir(join(await root, "machines"))).sort()) {
        if (!file.endsWith(".json")) continue;
        const state = await load(file.slice(0, -".json".length));
        if (running && state?.status !== "running") continue;
        if (state && Object.entries(labels).every(([k, v]) => state.spec.labels[k] === v))
          refs.push(`fake:${state.id}`);
      }
      return refs;
    },
  };
}
