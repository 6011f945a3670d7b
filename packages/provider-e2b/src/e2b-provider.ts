import {
  AgentComputerError,
  loggerOf,
  type ProviderCapabilities,
  type ProviderRef,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { type ConnectionOpts, Sandbox } from "e2b";
import { e2bFailure, sdkStatus, withControlPlaneRetry } from "./e2b-failure.js";
import { E2bMachine, type E2bMachineHost } from "./e2b-machine.js";
import {
  type E2bProviderOptions,
  e2bOptionsFromEnv,
  e2bProviderOptionsSchema,
  withoutUndefined,
} from "./e2b-provider-options.js";

/**
 * Desktops through the shared LinuxDesktopRuntime over envd; stop pauses
 * (processes and memory kept); the home is copied in and out; sandboxes
 * bill while running, so COMPUTER_MAX_ACTIVE_MS applies.
 */
export const E2B_CAPABILITIES: ProviderCapabilities = {
  desktop: true,
  multiScreen: true,
  pageBrowser: false,
  terminal: false,
  billsWhileRunning: true,
  stopKeepsMachine: true,
  mountedHome: false,
};

/** The metadata keys every computer sandbox carries beside the spec's labels. */
export const E2B_METADATA = {
  managed: "agent-computer.managed",
  computerId: "agent-computer.computer-id",
  homeKey: "agent-computer.home-key",
  screenLimit: "agent-computer.screen-limit",
} as const;

const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/**
 * Computers as E2B sandboxes (docs/architecture.md §9), on the `Sandbox`
 * lifecycle of the `e2b` SDK. Settings come from `options`, then from
 * `E2B_*` variables. Without an API key the provider is still made; each
 * computer call then fails UNAVAILABLE saying so.
 */
export function e2bProvider(
  options: Partial<E2bProviderOptions> = {},
  env: Record<string, string | undefined> = process.env,
): SandboxProvider {
  const merged = { ...e2bOptionsFromEnv(env), ...withoutUndefined(options) };
  if (merged.template === undefined) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      'Invalid E2bProviderOptions: at "template": required; pass the computer template (agent-computer-e2b-template build) or set E2B_TEMPLATE.',
    );
  }
  const parsed = parseInput(e2bProviderOptionsSchema, merged, "E2bProviderOptions");
  return sandboxProviderOn("e2b", parsed);
}

/** The provider over the SDK for one flavour (`kind`); shared by every E2B-compatible service. */
function sandboxProviderOn(kind: string, parsed: ReturnType<typeof e2bProviderOptionsSchema.parse>): SandboxProvider {
  const connection = (): ConnectionOpts => {
    if (!parsed.apiKey) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        "E2B computers are disabled: no API key (set E2B_API_KEY or pass apiKey to e2bProvider).",
        { retryable: false },
      );
    }
    return withoutUndefined({
      apiKey: parsed.apiKey,
      apiUrl: parsed.apiUrl,
      sandboxUrl: parsed.sandboxUrl,
      domain: parsed.domain,
      requestTimeoutMs: parsed.requestTimeoutMs,
    });
  };
  const host: E2bMachineHost = { kind, options: parsed, connection };
  const retry = <T>(call: () => Promise<T>, what: string, signal: AbortSignal) =>
    withControlPlaneRetry(call, { what, deadlineMs: parsed.controlPlaneDeadlineMs, signal });

  return defineSandboxProvider({
    kind,
    capabilities: E2B_CAPABILITIES,
    defaults: { image: parsed.template, screenLimit: parsed.screenLimit },
    defaultImage: async () => parsed.template,
    machineId: (id) => matchRefId(kind, id, SANDBOX_ID, "<sandbox id>")[0],

    async provision({ spec, image: template, context, signal }) {
      const opts = connection();
      const metadata = {
        ...spec.labels,
        [E2B_METADATA.managed]: "true",
        [E2B_METADATA.computerId]: spec.computerId,
        [E2B_METADATA.homeKey]: spec.homeKey,
        [E2B_METADATA.screenLimit]: String(spec.screenLimit),
      };
      const sandbox = await retry(
        () =>
          Sandbox.create(template, {
            ...opts,
            metadata,
            envs: { LANG: "C.UTF-8", ...parsed.envs, HOME: parsed.workspacePath },
            timeoutMs: parsed.timeoutMs,
            // A sandbox that times out pauses with its memory; it is never killed with the home in it.
            lifecycle: { onTimeout: "pause" },
            signal,
          }),
        `create a sandbox from template "${template}"`,
        signal,
      ).catch((error: unknown) => {
        if (AgentComputerError.is(error) && sdkStatus(error.cause) === 404) {
          throw new AgentComputerError(
            "NOT_FOUND",
            `The E2B template "${template}" does not exist for this key; build it with agent-computer-e2b-template build.`,
            { cause: error.cause },
          );
        }
        throw error;
      });
      const machine = new E2bMachine(host, sandbox, spec.screenLimit);
      try {
        await machine.makeHome(context);
      } catch (error) {
        await Sandbox.kill(sandbox.sandboxId, opts).catch(() => {});
        throw error;
      }
      loggerOf(context).info("e2b machine provisioned", { ref: machine.ref, homeKey: spec.homeKey, template });
      return machine;
    },

    async reconnect(id, { ref, signal }) {
      const opts = connection();
      let metadata: Record<string, string>;
      try {
        const info = await retry(() => Sandbox.getInfo(id, { ...opts, signal }), `look up ${ref}`, signal);
        metadata = info.metadata;
      } catch (error) {
        if (AgentComputerError.is(error) && sdkStatus(error.cause) === 404) return "gone";
        throw error;
      }
      // Not one of ours: never drive it.
      if (metadata[E2B_METADATA.managed] !== "true") return "gone";
      let sandbox: Sandbox;
      try {
        // ALWAYS with timeoutMs: a connect without it resets the sandbox timeout to 5 minutes (E2B #1055).
        sandbox = await retry(
          () => Sandbox.connect(id, { ...opts, timeoutMs: parsed.timeoutMs, signal }),
          `connect to ${ref}`,
          signal,
        );
      } catch (error) {
        if (AgentComputerError.is(error) && sdkStatus(error.cause) === 404) return "gone";
        throw error;
      }
      const screenLimit = Number(metadata[E2B_METADATA.screenLimit] ?? parsed.screenLimit);
      return new E2bMachine(host, sandbox, Number.isInteger(screenLimit) ? screenLimit : 0);
    },

    async list({ labels, signal }) {
      const opts = connection();
      const query = {
        metadata: { ...labels, [E2B_METADATA.managed]: "true" },
        state: ["running", "paused"] as ("running" | "paused")[],
      };
      const found: { id: string; startedAt: number }[] = [];
      try {
        const pages = Sandbox.list({ ...opts, query, limit: 100 });
        while (pages.hasNext) {
          const items = await retry(() => pages.nextItems({ signal }), "list sandboxes", signal);
          for (const item of items) found.push({ id: item.sandboxId, startedAt: item.startedAt.valueOf() });
        }
      } catch (error) {
        throw e2bFailure(error, "list sandboxes");
      }
      return found
        .sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id))
        .map((s) => `${kind}:${s.id}` as ProviderRef);
    },
  });
}
