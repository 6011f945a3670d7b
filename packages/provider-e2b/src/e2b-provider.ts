import {
  AgentComputerError,
  loggerOf,
  type ProviderCapabilities,
  type ProviderRef,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { COMPUTER_PATH } from "@agent-computer/desktop-runtime";
import {
  type ComputerQuarantine,
  HOSTED_COMPUTER_CAPABILITIES,
  memoryQuarantine,
  statusOfFailure,
} from "@agent-computer/provider-kit";
import type { ConnectionOpts } from "e2b";
import { e2bSecondUserDisplay } from "./e2b-display-user.js";
import { e2bFailure, withControlPlaneRetry } from "./e2b-failure.js";
import { E2bMachine, type E2bMachineHost, quarantinedError } from "./e2b-machine.js";
import { e2bNetworkOf } from "./e2b-network.js";
import {
  type E2bProviderOptions,
  e2bOptionsFromEnv,
  e2bProviderOptionsSchema,
  type ResolvedE2bProviderOptions,
  withoutUndefined,
} from "./e2b-provider-options.js";
import { E2B_SDK, NOVITA_SDK, type SandboxSdk } from "./sandbox-sdk.js";

/**
 * Desktops through the shared LinuxDesktopRuntime over envd; stop pauses
 * (processes and memory kept); the home is copied in and out; sandboxes
 * bill while running, so COMPUTER_MAX_ACTIVE_MS applies.
 */
export const E2B_CAPABILITIES: ProviderCapabilities = {
  ...HOSTED_COMPUTER_CAPABILITIES,
  // A spec's policy becomes the service's network config, enforced by its orchestrator (e2b-network.ts).
  egress: true,
};

/** The metadata keys every computer sandbox carries beside the spec's labels. */
export const E2B_METADATA = {
  managed: "agent-computer.managed",
  computerId: "agent-computer.computer-id",
  homeKey: "agent-computer.home-key",
  screenLimit: "agent-computer.screen-limit",
  /** "second-user" where the sandbox was set up with the display as a user of its own (e2b-display-user.ts). */
  display: "agent-computer.display",
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
  return sandboxProviderOn(E2B_SDK, parseOptions(E2B_SDK, options, env)).provider;
}

/** A Novita provider: the SandboxProvider, and `recover` for a computer it quarantined. */
export interface NovitaProvider extends SandboxProvider {
  /**
   * Ends a quarantined computer: its sandbox is killed and the quarantine
   * lifted, so the next reconnect says "gone" and the runtime replaces it
   * from its last checkpoint.
   */
  recover(ref: ProviderRef): Promise<void>;
}

/**
 * Computers on Novita's E2B-compatible service, through `novita-sandbox`
 * (its fork of an older E2B SDK) and the same code as `e2bProvider`.
 * Settings come from `options`, then from `NOVITA_*` variables. It needs
 * the computer template (no fallback to the stock desktop); stop and idle
 * pause with memory kept; a command whose kill cannot be confirmed pauses
 * and quarantines the computer until `recover`.
 */
export function novitaProvider(
  options: Partial<E2bProviderOptions> = {},
  env: Record<string, string | undefined> = process.env,
): NovitaProvider {
  const { provider, recover } = sandboxProviderOn(NOVITA_SDK, parseOptions(NOVITA_SDK, options, env));
  return Object.assign(provider, { recover });
}

function parseOptions(
  sdk: SandboxSdk,
  options: Partial<E2bProviderOptions>,
  env: Record<string, string | undefined>,
): ResolvedE2bProviderOptions {
  const merged = { ...e2bOptionsFromEnv(env, sdk.envPrefix), ...withoutUndefined(options) };
  if (merged.template === undefined) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid E2bProviderOptions: at "template": required; pass the computer template or set ${sdk.envPrefix}_TEMPLATE.`,
    );
  }
  return parseInput(e2bProviderOptionsSchema, merged, "E2bProviderOptions");
}

/** The provider over one flavour's SDK; every E2B-compatible service shares it. */
function sandboxProviderOn(
  sdk: SandboxSdk,
  parsed: ResolvedE2bProviderOptions,
): { provider: SandboxProvider; recover(ref: ProviderRef): Promise<void> } {
  const { kind, Sandbox } = sdk;
  const quarantine: ComputerQuarantine = parsed.quarantine ?? memoryQuarantine();
  const connection = (): ConnectionOpts => {
    if (!parsed.apiKey) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `${sdk.service} computers are disabled: no API key (set ${sdk.envPrefix}_API_KEY or pass apiKey).`,
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
  const host: E2bMachineHost = { sdk, quarantine, options: parsed, connection };
  const retry = <T>(call: () => Promise<T>, what: string, signal: AbortSignal) =>
    withControlPlaneRetry(call, { what, deadlineMs: parsed.controlPlaneDeadlineMs, signal, service: sdk.service });

  const provider = defineSandboxProvider({
    kind,
    capabilities: E2B_CAPABILITIES,
    defaults: { image: parsed.template, screenLimit: parsed.screenLimit },
    defaultImage: async () => parsed.template,
    machineId: (id) => matchRefId(kind, id, SANDBOX_ID, "<sandbox id>")[0],

    async provision({ spec, image: template, context, signal }) {
      const opts = connection();
      const network = e2bNetworkOf(spec.egress, sdk.service);
      const metadata = {
        ...spec.labels,
        [E2B_METADATA.managed]: "true",
        [E2B_METADATA.computerId]: spec.computerId,
        [E2B_METADATA.homeKey]: spec.homeKey,
        [E2B_METADATA.screenLimit]: String(spec.screenLimit),
      };
      const create = (from: string) =>
        retry(
          () =>
            Sandbox.create(from, {
              ...opts,
              metadata: { ...metadata, [E2B_METADATA.display]: from === template ? parsed.display : "shared" },
              // envd builds every process's environment itself (its PATH is systemd's default, not the
              // image's): the sandbox's variables are the only way the image's PATH reaches commands.
              envs: { LANG: "C.UTF-8", PATH: COMPUTER_PATH, ...parsed.envs, HOME: parsed.workspacePath },
              timeoutMs: parsed.timeoutMs,
              // A sandbox that times out pauses with its memory; it is never killed with the home in it.
              lifecycle: { onTimeout: "pause" },
              ...(network ? { network } : {}),
              signal,
            }),
          `create a sandbox from template "${from}"`,
          signal,
        );
      const missing = (error: unknown) => AgentComputerError.is(error) && statusOfFailure(error) === 404;
      let used = template;
      const sandbox = await create(template).catch(async (error: unknown) => {
        if (!missing(error)) throw error;
        const notFound = (also: string) =>
          new AgentComputerError(
            "NOT_FOUND",
            `The ${sdk.service} template "${template}" does not exist for this key${also}; build it with agent-computer-e2b-template build.`,
          );
        // Novita has no stock computer template (sdk.stockTemplate unset): refused whatever the options say.
        const stock =
          sdk.stockTemplate && (parsed.stockTemplate === undefined ? sdk.stockTemplate : parsed.stockTemplate);
        if (!stock || stock === template) throw notFound("");
        // Until the computer template exists, the service's stock desktop: shell and files work, the
        // computer's own desktop tools do not (they say so); the log says which template it got.
        used = stock;
        loggerOf(context).warn("e2b template missing: using the stock template", { requested: template, used: stock });
        return create(stock).catch((again: unknown) => {
          throw missing(again) ? notFound(`, nor does the stock template "${stock}"`) : again;
        });
      });
      // The stock template has no computer image, so no display user: its desktops are the stock ones.
      const secondUser = parsed.display === "second-user" && used === template;
      const displayUser = secondUser ? e2bSecondUserDisplay(parsed.user) : undefined;
      const machine = new E2bMachine(host, sandbox, spec.screenLimit, displayUser);
      try {
        if (displayUser) await machine.setUpSecondUser(context);
        await machine.makeHome(context);
      } catch (error) {
        await Sandbox.kill(sandbox.sandboxId, opts).catch(() => {});
        throw error;
      }
      loggerOf(context).info("e2b machine provisioned", { ref: machine.ref, homeKey: spec.homeKey, template: used });
      return machine;
    },

    async reconnect(id, { ref, signal }) {
      const opts = connection();
      // A quarantined computer is never resumed, not even to look at it.
      const reason = sdk.quarantineUnconfirmedKills ? await quarantine.reasonOf(ref) : undefined;
      if (reason !== undefined) throw quarantinedError(ref, reason);
      let metadata: Record<string, string>;
      try {
        const info = await retry(() => Sandbox.getInfo(id, { ...opts, signal }), `look up ${ref}`, signal);
        metadata = info.metadata;
      } catch (error) {
        if (AgentComputerError.is(error) && statusOfFailure(error) === 404) return "gone";
        throw error;
      }
      // Not one of ours: never drive it.
      if (metadata[E2B_METADATA.managed] !== "true") return "gone";
      let sandbox: InstanceType<typeof Sandbox>;
      try {
        // ALWAYS with timeoutMs: a connect without it resets the sandbox timeout to 5 minutes (E2B #1055).
        sandbox = await retry(
          () => Sandbox.connect(id, { ...opts, timeoutMs: parsed.timeoutMs, signal }),
          `connect to ${ref}`,
          signal,
        );
      } catch (error) {
        if (AgentComputerError.is(error) && statusOfFailure(error) === 404) return "gone";
        throw error;
      }
      const screenLimit = Number(metadata[E2B_METADATA.screenLimit] ?? parsed.screenLimit);
      const displayUser =
        metadata[E2B_METADATA.display] === "second-user" ? e2bSecondUserDisplay(parsed.user) : undefined;
      return new E2bMachine(host, sandbox, Number.isInteger(screenLimit) ? screenLimit : 0, displayUser);
    },

    async list({ labels, running, signal }) {
      const opts = connection();
      const query = {
        metadata: { ...labels, [E2B_METADATA.managed]: "true" },
        state: (running ? ["running"] : ["running", "paused"]) as ("running" | "paused")[],
      };
      const found: { id: string; startedAt: number }[] = [];
      try {
        const pages = Sandbox.list({ ...opts, query, limit: 100 });
        while (pages.hasNext) {
          const items = await retry(() => pages.nextItems({ signal }), "list sandboxes", signal);
          for (const item of items) found.push({ id: item.sandboxId, startedAt: item.startedAt.valueOf() });
        }
      } catch (error) {
        throw e2bFailure(error, "list sandboxes", sdk.service);
      }
      return found
        .sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id))
        .map((s) => `${kind}:${s.id}` as ProviderRef);
    },
  });
  return {
    provider,
    async recover(ref) {
      const id = ref.slice(`${kind}:`.length);
      await withControlPlaneRetry(() => Sandbox.kill(id, connection()), {
        what: `kill quarantined ${ref}`,
        deadlineMs: parsed.controlPlaneDeadlineMs,
        signal: AbortSignal.timeout(parsed.controlPlaneDeadlineMs + parsed.requestTimeoutMs),
        service: sdk.service,
      });
      await quarantine.remove(ref);
    },
  };
}
