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
import { BoxdClient } from "./boxd-client.js";
import { BoxdMachine, type BoxdMachineHost, bringUp, GONE_STATUSES, RUNNING_STATUSES } from "./boxd-machine.js";
import { labelsOfName, machineNameOf } from "./boxd-names.js";
import { type BoxdProviderOptions, boxdProviderOptionsSchema } from "./boxd-provider-options.js";
import { SetupSnapshot } from "./boxd-setup-snapshot.js";
import { BoxdTokenSource } from "./boxd-token.js";

/**
 * The kit's hosted computer: exec, files and the home, desktops with
 * several screens, the page browser and the terminal (their screen
 * gateway on the public URL's port 8000); stop suspends a machine with its
 * memory (`stopKeepsMachine`), and it bills while it runs.
 */
export const BOXD_CAPABILITIES: ProviderCapabilities = Object.freeze({ ...HOSTED_COMPUTER_CAPABILITIES });

type Environment = Record<string, string | undefined>;

/**
 * Computers as boxd microVMs through this package's gRPC client of the
 * service's published API (proto/boxd-api.proto): created isolated (no
 * route to the organisation's other machines) under a name that carries
 * their labels (boxd-names.ts), their idle timers set explicitly;
 * reconnect finds a machine by that name and brings it back; stop
 * suspends with memory kept; destroy destroys. A machine the service does
 * not find, or finds failed, is "gone"; a refused key is an error, never
 * "gone". The key and organisation default to BOXD_API_KEY and BOXD_ORG,
 * the endpoints to BOXD_API_URL and BOXD_TOKEN_URL, of `env`.
 */
export function boxdProvider(
  options: Partial<BoxdProviderOptions> = {},
  env: Environment = process.env,
): SandboxProvider {
  const fromEnv = (name: string) => env[name]?.trim() || undefined;
  const defaults = {
    apiKey: fromEnv("BOXD_API_KEY"),
    org: fromEnv("BOXD_ORG"),
    apiUrl: fromEnv("BOXD_API_URL"),
    tokenUrl: fromEnv("BOXD_TOKEN_URL"),
  };
  const given = Object.fromEntries(Object.entries(defaults).filter(([, value]) => value !== undefined));
  const parsed = parseInput(boxdProviderOptionsSchema, { ...given, ...options }, "BoxdProviderOptions");
  const secrets = new Set<string>([parsed.apiKey]);
  const tokens = new BoxdTokenSource({
    apiKey: parsed.apiKey,
    tokenUrl: parsed.tokenUrl,
    requestTimeoutMs: parsed.requestTimeoutMs,
    secrets,
  });
  const client = new BoxdClient({
    apiUrl: parsed.apiUrl,
    tokens,
    requestTimeoutMs: parsed.requestTimeoutMs,
    retryMs: parsed.retryMs,
    secrets,
  });
  const host: BoxdMachineHost = { client, options: parsed };
  const org = parsed.org ? { org: parsed.org } : {};
  if (parsed.snapshot === "auto" && !parsed.setup) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "snapshot: \"auto\" needs a `setup` script: no default setup for boxd's images is written yet. Give `setup`, or name a snapshot that holds the computer's tools.",
    );
  }
  // The snapshot named after the setup, found or built once in the background.
  const setupSnapshot =
    parsed.setup && (parsed.snapshot === undefined || parsed.snapshot === "auto")
      ? new SetupSnapshot(host, parsed.setup)
      : undefined;
  const fixedSnapshot = parsed.snapshot === "auto" ? undefined : parsed.snapshot;

  return defineSandboxProvider({
    kind: "boxd",
    capabilities: BOXD_CAPABILITIES,
    defaults: { screenLimit: parsed.screenLimit },
    // The spec's image is the computer image; on boxd the machine's image is `imageRef` (or a snapshot).
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("boxd", id, SERVICE_ID_PATTERN, "<machine name>")[0],

    async provision({ spec, context, signal }) {
      const labels = {
        ...spec.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: spec.computerId,
        [COMPUTER_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(spec.screenLimit),
      };
      const name = machineNameOf(labels); // too many labels: refused before anything is made
      const ref = `boxd:${name}` as const;
      const what = `create ${name}`;
      try {
        const from = fixedSnapshot ?? (await setupSnapshot?.resolve(context, signal));
        const create = from
          ? client.call(
              "CreateVmFromSnapshot",
              { snapshot: from, name, isolated: true, ...org },
              what,
              signal,
              "not-found",
            )
          : client.call(
              "CreateVm",
              { name, image_ref: parsed.imageRef, isolated: true, ...org },
              what,
              signal,
              "not-found",
            );
        await create.catch((error: unknown) => {
          // A create whose answer was lost is sent again and finds its name
          // taken: by the first attempt, as the name's random part is this
          // provision's alone. The machine is there; go on with it.
          if (!AgentComputerError.is(error, "CONFLICT")) throw error;
        });
        await bringUp(host, name, signal);
        // Both idle timers set, never left to defaults the docs disagree on.
        await client.call(
          "SetAutoSuspendTimeout",
          { vm_id: name, timeout_secs: parsed.autoSuspendSeconds },
          "set the auto-suspend timer",
          signal,
        );
        await client.call(
          "SetAutoHibernateTimeout",
          { vm_id: name, timeout_secs: parsed.autoHibernateSeconds },
          "set the auto-hibernate timer",
          signal,
        );
        const machine = new BoxdMachine(host, name, spec.screenLimit);
        // Until the setup snapshot is ready, the machine installs the tools itself.
        if (setupSnapshot && !from) await machine.runSetup(setupSnapshot.setup, parsed.setupTimeoutMs, context);
        await machine.makeHome(context);
        loggerOf(context).info("machine provisioned", { ref, homeKey: spec.homeKey, snapshot: from ?? null });
        return machine;
      } catch (error) {
        // A machine left behind bills: destroy it, and say so when that fails too.
        await client
          .call("DestroyVm", { vm_id: name }, `destroy ${name}`, AbortSignal.timeout(60_000))
          .catch((cleanup) => {
            if (AgentComputerError.is(cleanup, "PROVIDER_GONE")) return;
            loggerOf(context).warn("a failed provision's machine could not be destroyed", {
              ref,
              error: AgentComputerError.is(cleanup) ? cleanup.message : String(cleanup),
            });
          });
        throw error;
      }
    },

    async reconnect(name, { context, ref, signal }) {
      const labels = labelsOfName(name);
      if (!labels) return "gone"; // not one of ours: never drive it
      try {
        const vm = await client.get(name, signal);
        if (GONE_STATUSES.has(vm.status)) return "gone";
        if (await bringUp(host, name, signal)) loggerOf(context).info("machine resumed", { ref });
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return "gone";
        throw error;
      }
      return new BoxdMachine(host, name, labels.screenLimit);
    },

    async list({ labels, running, signal }) {
      const wanted = { ...labels, [COMPUTER_LABELS.managed]: "true" };
      const names = new Set<string>();
      for (const entry of await client.list(signal)) {
        for (const text of entry.texts) if (labelsOfName(text)?.has(wanted)) names.add(text);
      }
      const refs: `boxd:${string}`[] = [];
      // GetVm, published, says the status the answer's unpublished fields might.
      for (const name of [...names].sort()) {
        const vm = await client.get(name, signal).catch((error: unknown) => {
          if (AgentComputerError.is(error, "PROVIDER_GONE")) return undefined;
          throw error;
        });
        if (!vm || GONE_STATUSES.has(vm.status)) continue;
        if (running && !RUNNING_STATUSES.has(vm.status)) continue;
        refs.push(`boxd:${name}`);
      }
      return refs;
    },
  });
}
