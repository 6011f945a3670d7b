import {
  AgentComputerError,
  COMPUTER_LABELS,
  loggerOf,
  type ProviderCapabilities,
  type ProviderRef,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { HOSTED_COMPUTER_CAPABILITIES, SERVICE_ID_PATTERN } from "@agent-computer/provider-kit";
import { isRunning } from "./railway-answers.js";
import { RailwayClient } from "./railway-client.js";
import { railwaySecondUserDisplay } from "./railway-display-user.js";
import { RailwayMachine } from "./railway-machine.js";
import { execUrlOf, type RailwayProviderOptions, railwayProviderOptionsSchema } from "./railway-provider-options.js";
import { RailwayServiceHost } from "./railway-service.js";
import { type DisplayMode, labelsOfName, serviceNameOf } from "./service-names.js";

/**
 * Desktops through the shared Linux runtime over the exec bridge and the
 * service's public domains; stop stops the deployment and keeps the
 * machine (its volume: the home and the browser profiles; not its memory);
 * the home is a folder on the volume, copied in and out; a running
 * deployment bills.
 */
export const RAILWAY_CAPABILITIES: ProviderCapabilities = HOSTED_COMPUTER_CAPABILITIES;

type Environment = Record<string, string | undefined>;

/**
 * Computers as Railway services (docs/architecture.md §9), through this
 * package's client of Railway's published GraphQL schema: each computer
 * is a service in one project and environment, deployed from the computer
 * image with a volume for its home; commands go over Railway's exec
 * bridge. The token, project and environment default to
 * RAILWAY_API_TOKEN (else RAILWAY_TOKEN, a project token),
 * RAILWAY_PROJECT_ID and RAILWAY_ENVIRONMENT_ID of `env`, as the official
 * SDK reads them.
 */
export function railwayProvider(
  options: Partial<RailwayProviderOptions> = {},
  env: Environment = process.env,
): SandboxProvider {
  const fromEnv = (name: string) => env[name]?.trim() || undefined;
  const accountToken = fromEnv("RAILWAY_API_TOKEN");
  const projectToken = fromEnv("RAILWAY_TOKEN");
  const token = options.token ?? accountToken ?? projectToken;
  const tokenKind = options.tokenKind ?? (options.token || accountToken || !projectToken ? "account" : "project");
  const given = {
    ...options,
    tokenKind,
    ...(token ? { token } : {}),
    projectId: options.projectId ?? fromEnv("RAILWAY_PROJECT_ID"),
    environmentId: options.environmentId ?? fromEnv("RAILWAY_ENVIRONMENT_ID"),
    endpoint: options.endpoint ?? fromEnv("RAILWAY_API_URL"),
  };
  const parsed = parseInput(
    railwayProviderOptionsSchema,
    Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)),
    "RailwayProviderOptions",
  );
  const secrets = new Set<string>([parsed.token]);
  const client = new RailwayClient({
    token: parsed.token,
    tokenKind: parsed.tokenKind,
    endpoint: parsed.endpoint,
    requestTimeoutMs: parsed.requestTimeoutMs,
    retryMs: parsed.retryMs,
    secrets,
  });
  const displayOf = (mode: DisplayMode) =>
    mode === "second-user" ? railwaySecondUserDisplay(parsed.user, parsed.volumeMountPath) : undefined;
  const service = new RailwayServiceHost(
    client,
    parsed,
    parsed.execUrl ?? execUrlOf(parsed.endpoint),
    secrets,
    async () => parsed.image ?? (await computerImageRef()),
  );

  return defineSandboxProvider({
    kind: "railway",
    capabilities: RAILWAY_CAPABILITIES,
    defaults: { screenLimit: parsed.screenLimit },
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("railway", id, SERVICE_ID_PATTERN, "<service id>")[0],

    async provision({ spec, context, signal }) {
      const labels = {
        ...spec.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: spec.computerId,
        [COMPUTER_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(spec.screenLimit),
      };
      const name = serviceNameOf(labels, parsed.display); // too many labels: refused before anything is made
      let made: string | undefined;
      try {
        const serviceId = await service.create(name, signal, (id) => {
          made = id;
        });
        const machine = new RailwayMachine(service, serviceId, spec.screenLimit, displayOf(parsed.display));
        // Where the display is a second user, root's setup runs here, before the bot's first command.
        await machine.makeHome(context);
        loggerOf(context).info("service provisioned", { ref: machine.ref, homeKey: spec.homeKey });
        return machine;
      } catch (error) {
        // A service left behind bills (and its volume is kept): delete both, and say so when that fails too.
        if (made) {
          await service.remove(made, AbortSignal.timeout(60_000)).catch((cleanup) =>
            loggerOf(context).warn("a failed provision's service could not be deleted", {
              ref: `railway:${made}`,
              error: AgentComputerError.is(cleanup) ? cleanup.message : String(cleanup),
            }),
          );
        }
        throw error;
      }
    },

    async reconnect(id, { signal }) {
      let instance: Awaited<ReturnType<RailwayServiceHost["instance"]>>;
      try {
        instance = await service.instance(id, signal);
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return "gone";
        throw error;
      }
      const labels = labelsOfName(instance.serviceName);
      if (!labels) return "gone"; // not one of ours: never drive it
      if (!isRunning(instance.latestDeployment)) await service.start(id, signal);
      return new RailwayMachine(service, id, labels.screenLimit, displayOf(labels.display));
    },

    async list({ labels, running, signal }) {
      const wanted = { ...labels, [COMPUTER_LABELS.managed]: "true" };
      const ours = (await service.services(signal))
        .filter((s) => labelsOfName(s.name)?.has(wanted) === true)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
      const kept: ProviderRef[] = [];
      for (const s of ours) {
        if (running) {
          const instance = await service.instance(s.id, signal).catch((error) => {
            if (AgentComputerError.is(error, "PROVIDER_GONE")) return undefined;
            throw error;
          });
          if (!isRunning(instance?.latestDeployment)) continue;
        }
        kept.push(`railway:${s.id}` as const);
      }
      return kept;
    },
  });
}
