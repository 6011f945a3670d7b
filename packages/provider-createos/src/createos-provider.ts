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
import type { Sandbox } from "@nodeops-createos/sandbox";
import { createosEgressOf } from "./createos-egress.js";
import { CreateosMachine, type CreateosMachineHost, resumeSandbox } from "./createos-machine.js";
import { labelsOfName, sandboxNameOf } from "./createos-names.js";
import { type CreateosProviderOptions, createosProviderOptionsSchema } from "./createos-provider-options.js";
import { CREATEOS_GONE_STATES, CreateosService } from "./createos-service.js";
import { NamedTemplate } from "./named-template.js";

/**
 * Desktops through the shared LinuxDesktopRuntime over managed processes
 * and the public ingress URL; stop pauses the VM with its memory (so
 * `stopKeepsMachine`, and a process started before stop runs on after
 * reconnect); the home is a folder inside the VM, copied in and out;
 * sandboxes bill while they run.
 */
/** The kit's hosted computer, but its screens are released at the end of every run, as the product documents say. */
export const CREATEOS_CAPABILITIES: ProviderCapabilities = {
  ...HOSTED_COMPUTER_CAPABILITIES,
  keepsScreensBetweenRuns: false,
  // A spec's policy becomes the sandbox's egress allowlist, enforced by the service outside the VM (createos-egress.ts).
  egress: true,
};

type Environment = Record<string, string | undefined>;

/**
 * Computers as CreateOS sandboxes (Firecracker microVMs) through the
 * official SDK, @nodeops-createos/sandbox: created synchronously from a
 * rootfs or template holding the computer's tools, with ingress on;
 * named with the labels (the service has none: createos-names.ts); stop
 * pauses, reconnect resumes the same VM. A sandbox the service reports
 * missing, destroyed, failed or in error is "gone"; a refused key is an
 * error, never "gone". Key, base and rootfs default to
 * CREATEOS_SANDBOX_API_KEY, CREATEOS_SANDBOX_BASE_URL (the SDK's own
 * variables, its config.js) and CREATEOS_ROOTFS of `env`.
 */
export function createosProvider(
  options: Partial<CreateosProviderOptions> = {},
  env: Environment = process.env,
): SandboxProvider {
  const fromEnv = (name: string) => env[name]?.trim() || undefined;
  const apiKey = options.apiKey ?? fromEnv("CREATEOS_SANDBOX_API_KEY");
  const baseUrl = options.baseUrl ?? fromEnv("CREATEOS_SANDBOX_BASE_URL");
  const rootfs = options.rootfs ?? fromEnv("CREATEOS_ROOTFS");
  const parsed = parseInput(
    createosProviderOptionsSchema,
    { ...options, ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}), ...(rootfs ? { rootfs } : {}) },
    "CreateosProviderOptions",
  );
  const service = new CreateosService({
    apiKey: parsed.apiKey,
    baseUrl: parsed.baseUrl,
    requestTimeoutMs: parsed.requestTimeoutMs,
    retryMs: parsed.retryMs,
    secrets: new Set([parsed.apiKey]),
  });
  const host: CreateosMachineHost = { service, options: parsed };
  // The template built from the recipe, found or built once (when no rootfs is named).
  const named =
    parsed.rootfs === undefined && parsed.template
      ? new NamedTemplate(service, parsed.template, parsed.templateTimeoutMs)
      : undefined;
  const machineOf = (sandbox: Sandbox, screenLimit: number) =>
    new CreateosMachine(host, sandbox.id, sandbox.data.ingress_url_template, screenLimit);

  return defineSandboxProvider({
    kind: "createos",
    capabilities: CREATEOS_CAPABILITIES,
    defaults: { screenLimit: parsed.screenLimit },
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("createos", id, SERVICE_ID_PATTERN, "<sandbox id>")[0],

    async provision({ spec, context, signal }) {
      const labels = {
        ...spec.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: spec.computerId,
        [COMPUTER_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(spec.screenLimit),
      };
      const name = sandboxNameOf(parsed.namePrefix, labels); // too many labels: refused before anything is made
      const egress = createosEgressOf(spec.egress); // what the service cannot hold: refused before anything is made
      const rootfs = parsed.rootfs ?? (await (named as NamedTemplate).resolve(context, signal));
      const sandbox = await service.create(
        { shape: parsed.shape, rootfs, name, ingress_enabled: true, ...(egress ? { egress } : {}) },
        signal,
      );
      const ref = `createos:${sandbox.id}` as const;
      const machine = machineOf(sandbox, spec.screenLimit);
      try {
        if (egress) await service.assertEgressHeld(sandbox, signal);
        await machine.makeHome(context);
      } catch (error) {
        // A sandbox left behind bills: destroy it, and say so when that fails too.
        await machine.destroy().catch((cleanup) =>
          loggerOf(context).warn("a failed provision's sandbox could not be destroyed", {
            ref,
            error: AgentComputerError.is(cleanup) ? cleanup.message : String(cleanup),
          }),
        );
        throw error;
      }
      loggerOf(context).info("sandbox provisioned", { ref, homeKey: spec.homeKey, rootfs });
      return machine;
    },

    async reconnect(id, { ref, context, signal }) {
      let sandbox: Sandbox;
      try {
        sandbox = await service.get(id, signal);
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return "gone";
        throw error;
      }
      const labels = labelsOfName(parsed.namePrefix, sandbox.name);
      // Not one of ours, or never coming back: never drive it.
      if (!labels || CREATEOS_GONE_STATES.has(sandbox.status)) return "gone";
      try {
        sandbox = await resumeSandbox(host, id, signal);
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) {
          loggerOf(context).warn("sandbox cannot be resumed; replacing it", { ref });
          return "gone";
        }
        throw error;
      }
      return machineOf(sandbox, labels.screenLimit);
    },

    async list({ labels, running, signal }) {
      const wanted = { ...labels, [COMPUTER_LABELS.managed]: "true" };
      return (await service.list(signal))
        .filter((sandbox) => !CREATEOS_GONE_STATES.has(sandbox.status))
        .filter((sandbox) => !running || sandbox.status === "running")
        .filter((sandbox) => labelsOfName(parsed.namePrefix, sandbox.name)?.has(wanted) === true)
        .sort(
          (a, b) =>
            String(a.data.created_at ?? "").localeCompare(String(b.data.created_at ?? "")) || a.id.localeCompare(b.id),
        )
        .map((sandbox) => `createos:${sandbox.id}` as const);
    },
  });
}
