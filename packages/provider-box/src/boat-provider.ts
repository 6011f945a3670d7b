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
import type { BoatSandbox } from "./boat-answers.js";
import { BOAT_GONE_STATES, BOAT_READY_STATES, BoatClient, idempotencyKey } from "./boat-client.js";
import { BoatMachine, type BoatMachineHost, resumeSandbox, waitForState } from "./boat-machine.js";
import { labelsOfName, sandboxNameOf } from "./boat-names.js";
import { type BoatProviderOptions, boatProviderOptionsSchema } from "./boat-provider-options.js";
import { NamedSnapshot } from "./named-snapshot.js";

/**
 * Desktops through the shared LinuxDesktopRuntime over the commands API and
 * private routes; stop archives the sandbox (its disk kept, its memory not)
 * and reconnect resumes the same sandbox; the home is a folder inside it,
 * copied in and out; sandboxes bill while they run.
 */
export const BOAT_CAPABILITIES: ProviderCapabilities = HOSTED_COMPUTER_CAPABILITIES;

type Environment = Record<string, string | undefined>;

/**
 * Computers as Boat sandboxes, the service formerly called Box
 * (docs/architecture.md §9), through this package's client of its
 * published API (boat-client.ts): created and resumed with `noEnv: true`
 * so no account environment enters a computer, their auto-stop kept a
 * window ahead while in use; stop archives; destroy confirms the delete
 * and follows it. A sandbox the service reports missing, cancelled or in
 * `error` is "gone" (the runtime replaces it and restores the home); a
 * refused API key is an error, never "gone". The key and base default to
 * BOAT_API_KEY and BOAT_API_URL (else BOX_API_KEY, BOX_API_URL) of `env`.
 */
export function boatProvider(
  options: Partial<BoatProviderOptions> = {},
  env: Environment = process.env,
): SandboxProvider {
  const fromEnv = (boat: string, box: string) => env[boat]?.trim() || env[box]?.trim() || undefined;
  const apiKey = options.apiKey ?? fromEnv("BOAT_API_KEY", "BOX_API_KEY");
  const baseUrl = options.baseUrl ?? fromEnv("BOAT_API_URL", "BOX_API_URL");
  const parsed = parseInput(
    boatProviderOptionsSchema,
    { ...options, ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}) },
    "BoatProviderOptions",
  );
  if (parsed.snapshot === "auto" && !parsed.setup) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "snapshot: \"auto\" needs a `setup` script: no default setup for the service's base image is written yet. Give `setup`, or name a snapshot that holds the computer's tools.",
    );
  }
  const secrets = new Set<string>([parsed.apiKey]);
  const client = new BoatClient({
    apiKey: parsed.apiKey,
    baseUrl: parsed.baseUrl,
    requestTimeoutMs: parsed.requestTimeoutMs,
    retryMs: parsed.retryMs,
    secrets,
  });
  const host: BoatMachineHost = { client, options: parsed, secrets };
  // The snapshot named after the setup, found or built once in the background.
  const named =
    parsed.setup && (parsed.snapshot === undefined || parsed.snapshot === "auto")
      ? new NamedSnapshot(host, parsed.setup)
      : undefined;
  const fixedSnapshot = parsed.snapshot === "auto" ? undefined : parsed.snapshot;
  const machineOf = (id: string, screenLimit: number, startedAt?: number) =>
    new BoatMachine(host, id, screenLimit, startedAt);

  return defineSandboxProvider({
    kind: "box",
    capabilities: BOAT_CAPABILITIES,
    defaults: { screenLimit: parsed.screenLimit },
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("box", id, SERVICE_ID_PATTERN, "<sandbox id>")[0],

    async provision({ spec, context, signal }) {
      const labels = {
        ...spec.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: spec.computerId,
        [COMPUTER_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(spec.screenLimit),
      };
      const name = sandboxNameOf(labels); // too many labels: refused before anything is made
      const from = fixedSnapshot ?? (await named?.resolve(context, signal));
      const startedAt = Date.now();
      const sandbox = await client.create(
        { noEnv: true, ttlSeconds: parsed.ttlSeconds, ...(from ? { from } : {}) },
        idempotencyKey(),
        signal,
      );
      const ref = `box:${sandbox.id}` as const;
      const machine = machineOf(sandbox.id, spec.screenLimit, startedAt);
      try {
        await client.update(sandbox.id, { name }, signal);
        await waitForState(host, sandbox.id, signal, (state) => BOAT_READY_STATES.has(state));
        // Until the snapshot is ready, the computer installs the tools itself.
        if (named && !from) await machine.runSetup(named.setup, parsed.setupTimeoutMs, context);
        await machine.makeHome(context);
      } catch (error) {
        // A sandbox left behind bills: delete it, and say so when that fails too.
        await client.delete(sandbox.id, AbortSignal.timeout(60_000)).catch((cleanup) =>
          loggerOf(context).warn("a failed provision's sandbox could not be deleted", {
            ref,
            error: AgentComputerError.is(cleanup) ? cleanup.message : String(cleanup),
          }),
        );
        throw error;
      }
      loggerOf(context).info("sandbox provisioned", { ref, homeKey: spec.homeKey, snapshot: from ?? null });
      return machine;
    },

    async reconnect(id, { ref, context, signal }) {
      let sandbox: BoatSandbox;
      try {
        sandbox = await client.get(id, signal);
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return "gone";
        throw error;
      }
      const labels = labelsOfName(sandbox.name);
      // Not one of ours, or never coming back: never drive it.
      if (!labels || BOAT_GONE_STATES.has(sandbox.state)) return "gone";
      let resumed: boolean;
      try {
        resumed = await resumeSandbox(host, id, signal);
      } catch (error) {
        if (!AgentComputerError.is(error)) throw error;
        // Unrecoverable (an error resume cannot repair, expired snapshot data): replaced from the checkpoint.
        if (error.code === "PROVIDER_GONE") return "gone";
        const status = error.details?.status;
        if (typeof status === "number" && status >= 400 && status < 500 && ![401, 403, 429].includes(status)) {
          loggerOf(context).warn("sandbox cannot be resumed; replacing it", { ref, status });
          return "gone";
        }
        throw error;
      }
      return machineOf(id, labels.screenLimit, resumed ? Date.now() : undefined);
    },

    async list({ labels, running, signal }) {
      const wanted = { ...labels, [COMPUTER_LABELS.managed]: "true" };
      return (await client.list(signal))
        .filter((sandbox) => !BOAT_GONE_STATES.has(sandbox.state))
        .filter((sandbox) => !running || BOAT_READY_STATES.has(sandbox.state))
        .filter((sandbox) => labelsOfName(sandbox.name)?.has(wanted) === true)
        .sort((a, b) => String(a.createdAt ?? "").localeCompare(String(b.createdAt ?? "")) || a.id.localeCompare(b.id))
        .map((sandbox) => `box:${sandbox.id}` as const);
    },
  });
}

/** The provider's name before the service was renamed (Box is now Boat). */
export const boxProvider = boatProvider;
/** The capabilities under the old name. */
export const BOX_CAPABILITIES = BOAT_CAPABILITIES;
