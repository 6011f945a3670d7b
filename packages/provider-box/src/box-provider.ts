import {
  AgentComputerError,
  COMPUTER_LABELS,
  loggerOf,
  type ProviderCapabilities,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { HOSTED_COMPUTER_CAPABILITIES, SERVICE_ID_PATTERN } from "@agent-computer/provider-kit";
import { BOX_GONE_STATES, BOX_READY_STATES, BoxClient, type BoxRecord, idempotencyKey } from "./box-client.js";
import { BoxMachine, type BoxMachineHost, resumeBox, waitForState } from "./box-machine.js";
import { type BoxProviderOptions, boxProviderOptionsSchema } from "./box-provider-options.js";
import { NamedSnapshot } from "./named-snapshot.js";

/**
 * Desktops through the shared LinuxDesktopRuntime over the commands API and
 * private routes; stop archives the box (its disk kept, its memory not) and
 * reconnect resumes the same box; the home is a folder inside it, copied in
 * and out; boxes bill while they run.
 */
export const BOX_CAPABILITIES: ProviderCapabilities = HOSTED_COMPUTER_CAPABILITIES;

/**
 * The service has no labels: a box's labels live in its name, as this
 * prefix and base64url JSON (see the README). `list` reads them back.
 */
const NAME_PREFIX = "agent-computer.";

/** The name that carries `labels`. */
export function boxNameOf(labels: Record<string, string>): string {
  const sorted = Object.fromEntries(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
  return `${NAME_PREFIX}${Buffer.from(JSON.stringify(sorted)).toString("base64url")}`;
}

/** The labels a box's name carries; undefined for a box this project did not name. */
export function labelsOfBox(box: Pick<BoxRecord, "name">): Record<string, string> | undefined {
  if (!box.name?.startsWith(NAME_PREFIX)) return undefined;
  try {
    const labels = JSON.parse(Buffer.from(box.name.slice(NAME_PREFIX.length), "base64url").toString("utf8"));
    return labels && typeof labels === "object" ? (labels as Record<string, string>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Computers as Box microVMs (docs/architecture.md §9), through this
 * package's small client (box-client.ts): created and resumed with
 * `noEnv: true` so no account environment enters a computer, with a TTL
 * refreshed while in use; stop archives; destroy confirms the delete. A
 * box the service reports missing, deleted, cancelled or unrecoverable is
 * "gone" (the runtime replaces it and restores the home); a refused API
 * key is an error, never "gone".
 */
export function boxProvider(options: BoxProviderOptions): SandboxProvider {
  const parsed = parseInput(boxProviderOptionsSchema, options, "BoxProviderOptions");
  if (parsed.snapshot === "auto" && !parsed.setup) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "snapshot: \"auto\" needs a `setup` script: no default setup for the service's base image is written yet. Give `setup`, or name a snapshot that holds the computer's tools.",
    );
  }
  const secrets = new Set<string>([parsed.apiKey]);
  const client = new BoxClient({
    apiKey: parsed.apiKey,
    baseUrl: parsed.baseUrl,
    confirmDeleteHeader: parsed.confirmDeleteHeader,
    requestTimeoutMs: parsed.requestTimeoutMs,
    retryMs: parsed.retryMs,
    secrets,
  });
  const host: BoxMachineHost = { client, options: parsed, secrets };
  // The snapshot named after the setup, found or built once in the background.
  const named =
    parsed.setup && (parsed.snapshot === undefined || parsed.snapshot === "auto")
      ? new NamedSnapshot(host, parsed.setup)
      : undefined;
  const fixedSnapshot = parsed.snapshot === "auto" ? undefined : parsed.snapshot;
  const machineOf = (id: string, labels: Record<string, string> | undefined) =>
    new BoxMachine(host, id, Number(labels?.[COMPUTER_LABELS.screenLimit] ?? parsed.screenLimit) || 0);

  return defineSandboxProvider({
    kind: "box",
    capabilities: BOX_CAPABILITIES,
    defaults: { screenLimit: parsed.screenLimit },
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("box", id, SERVICE_ID_PATTERN, "<box id>")[0],

    async provision({ spec, context, signal }) {
      const labels = {
        ...spec.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: spec.computerId,
        [COMPUTER_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(spec.screenLimit),
      };
      const from = fixedSnapshot ?? (await named?.resolve(context, signal));
      // One key for the create and its retries: a create whose answer was lost gives the same box again.
      const box = await client.create(
        { noEnv: true, ttlSeconds: parsed.ttlSeconds, ...(from ? { from } : {}) },
        idempotencyKey(),
        signal,
      );
      const ref = `box:${box.id}` as const;
      const machine = machineOf(box.id, labels);
      try {
        await client.update(box.id, { name: boxNameOf(labels) }, signal);
        await waitForState(host, box.id, signal, (state) => BOX_READY_STATES.has(state));
        // Until the snapshot is ready, the computer installs the tools itself.
        if (named && !from) await machine.runSetup(named.setup, parsed.setupTimeoutMs, context);
        await machine.makeHome(context);
      } catch (error) {
        await client.delete(box.id, AbortSignal.timeout(30_000)).catch(() => {});
        throw error;
      }
      loggerOf(context).info("box provisioned", { ref, homeKey: spec.homeKey, snapshot: from ?? null });
      return machine;
    },

    async reconnect(id, { ref, context, signal }) {
      let box: BoxRecord;
      try {
        box = await client.get(id, signal);
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return "gone";
        throw error;
      }
      const labels = labelsOfBox(box);
      // Not one of ours, or never coming back: never drive it.
      if (labels?.[COMPUTER_LABELS.managed] !== "true") return "gone";
      if (BOX_GONE_STATES.has(box.state)) return "gone";
      try {
        await resumeBox(host, id, signal);
      } catch (error) {
        if (!AgentComputerError.is(error)) throw error;
        // Unrecoverable (an error resume cannot repair, expired snapshot data): replaced from the checkpoint.
        if (error.code === "PROVIDER_GONE") return "gone";
        const status = error.details?.status;
        if (
          typeof status === "number" &&
          status >= 400 &&
          status < 500 &&
          status !== 401 &&
          status !== 403 &&
          status !== 429
        ) {
          loggerOf(context).warn("box cannot be resumed; replacing it", { ref, status });
          return "gone";
        }
        throw error;
      }
      return machineOf(id, labels);
    },

    async list({ labels, running, signal }) {
      const boxes = await client.list(signal);
      const wanted = { ...labels, [COMPUTER_LABELS.managed]: "true" };
      return boxes
        .filter((box) => !BOX_GONE_STATES.has(box.state))
        .filter((box) => !running || BOX_READY_STATES.has(box.state))
        .filter((box) => {
          const own = labelsOfBox(box);
          return own !== undefined && Object.entries(wanted).every(([k, v]) => own[k] === v);
        })
        .sort((a, b) => String(a.createdAt ?? "").localeCompare(String(b.createdAt ?? "")) || a.id.localeCompare(b.id))
        .map((box) => `box:${box.id}` as const);
    },
  });
}
