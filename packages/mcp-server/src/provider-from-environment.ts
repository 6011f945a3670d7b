import { AgentComputerError, type SandboxProvider } from "@agent-computer/core";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { boatProvider } from "@agent-computer/provider-box";
import { boxdProvider } from "@agent-computer/provider-boxd";
import { daytonaProvider } from "@agent-computer/provider-daytona";
import { buildComputerImage, checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { e2bProvider, novitaProvider } from "@agent-computer/provider-e2b";
import { hostProvider, missingDisplayPrograms } from "@agent-computer/provider-host";
import { kubernetesProvider } from "@agent-computer/provider-kubernetes";
import { railwayProvider } from "@agent-computer/provider-railway";
import { createFakeProvider } from "@agent-computer/testing";
import type { ChosenProvider } from "./chosen-provider.js";
import { SANDBOX_PROVIDER_NAMES, type SandboxProviderName } from "./sandbox-provider-name.js";

type Environment = Record<string, string | undefined>;

/** Options of `providerFromEnvironment`. */
export interface ProviderFromEnvironmentOptions {
  /** Where Docker and host computers keep their homes (`dockerProvider`'s and `hostProvider`'s `dataDir`). */
  dataDir: string;
  /**
   * What an unset `SANDBOX_PROVIDER` means: `docker` (the self-host default;
   * no engine is an error), `docker-else-fake` (a demo: Docker where an
   * engine answers, else the in-process fake, and the reason says so), or
   * `docker-else-host-else-fake` (the quickstart: Docker where an engine
   * answers, else a host computer with a private display where this
   * machine has the display stack, else the fake, and the reason says
   * which and why).
   */
  whenUnset?: "docker" | "docker-else-fake" | "docker-else-host-else-fake";
  /** Progress lines (the computer image's build, on first use). */
  log?: (line: string) => void;
  /**
   * What a Docker engine without the computer image means: `build` it now
   * (the default; a demo's first run), or `refuse` with `UNAVAILABLE`
   * telling to run `agent-computer-mcp --prepare`. The MCP server refuses:
   * a build takes minutes, and a client's start-up timeout fires long
   * before `initialize` would be answered (issue 47).
   */
  whenImageMissing?: "build" | "refuse";
  /** The environment the computer image's name is read from (default `process.env`; AGENT_COMPUTER_IMAGE[_TAG]). */
  imageEnv?: Environment;
  /** How long the Docker engine has to answer before it counts as absent (default 3 s). */
  dockerAnswerMs?: number;
}

/**
 * The provider `SANDBOX_PROVIDER` names, configured from each provider's own
 * variables (docs/architecture.md §9, "Choosing a provider from the environment"). A missing key
 * is an `INVALID_ARGUMENT` naming the variable, at start, before any
 * computer is asked for; an unknown name lists the ones there are.
 */
export async function providerFromEnvironment(
  env: Environment,
  options: ProviderFromEnvironmentOptions,
): Promise<ChosenProvider> {
  const value = env.SANDBOX_PROVIDER?.trim();
  if (value === undefined || value === "") return unset({ imageEnv: env, ...options });
  if (!(SANDBOX_PROVIDER_NAMES as readonly string[]).includes(value)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `SANDBOX_PROVIDER=${JSON.stringify(value)} is not a provider: use one of ${SANDBOX_PROVIDER_NAMES.join(", ")}.`,
    );
  }
  const name = value as SandboxProviderName;
  const reason = `SANDBOX_PROVIDER=${name}`;
  if (name === "docker") return docker({ imageEnv: env, ...options }, reason, true) as Promise<ChosenProvider>;
  if (name === "host") return { name, provider: host(env, options.dataDir), reason };
  return { name, provider: await remote(name, env), reason };
}

async function unset(options: ProviderFromEnvironmentOptions): Promise<ChosenProvider> {
  if (options.whenUnset === undefined || options.whenUnset === "docker")
    return docker(options, "SANDBOX_PROVIDER unset", true) as Promise<ChosenProvider>;
  const chosen = await docker(options, "SANDBOX_PROVIDER unset", false);
  if (!("missing" in chosen)) return chosen;
  const noDocker = `SANDBOX_PROVIDER unset and ${chosen.missing}`;
  if (options.whenUnset === "docker-else-host-else-fake") {
    const noDisplay = await hostDisplayMissing();
    if (!noDisplay) {
      return {
        name: "host",
        provider: hostProvider({ dataDir: options.dataDir, display: "private" }),
        reason: `${noDocker}; this machine has the display stack, so a host computer with a private display (no isolation: it is this machine)`,
      };
    }
    return {
      name: "fake",
      provider: createFakeProvider(),
      reason: `${noDocker}; no host computer either: ${noDisplay}`,
    };
  }
  return { name: "fake", provider: createFakeProvider(), reason: noDocker };
}

/** Why this machine cannot run a host computer with a private display, or undefined when it can. */
async function hostDisplayMissing(): Promise<string | undefined> {
  if (process.platform !== "linux") return `host computers run on Linux only (this is ${process.platform})`;
  if (process.getuid?.() === 0) return "this process runs as root, and a host computer's desktop never does";
  const missing = await missingDisplayPrograms(process.env.PATH ?? "");
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((m) => m.debianPackage))].join(" ");
    return `the display stack is missing ${missing.map((m) => m.program).join(", ")} (apt-get install --no-install-recommends ${packages})`;
  }
  return undefined;
}

/**
 * A host computer: HOST_SANDBOX_DISPLAY `private` (the default: a private
 * X display per bot; what the machine lacks for it is named at the first
 * computer) or `none` (shell and files only); HOST_SANDBOX_USER `uid:gid`
 * runs its commands as another user (the server runs as root).
 */
function host(env: Environment, dataDir: string): SandboxProvider {
  const display = optional(env, "HOST_SANDBOX_DISPLAY") ?? "private";
  if (display !== "private" && display !== "none") {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `HOST_SANDBOX_DISPLAY=${JSON.stringify(display)}: use private or none.`,
      {
        details: { variable: "HOST_SANDBOX_DISPLAY" },
      },
    );
  }
  const user = optional(env, "HOST_SANDBOX_USER");
  const ids = user === undefined ? undefined : /^(\d+):(\d+)$/.exec(user);
  if (user !== undefined && !ids) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `HOST_SANDBOX_USER=${JSON.stringify(user)}: use uid:gid, numbers.`,
      {
        details: { variable: "HOST_SANDBOX_USER" },
      },
    );
  }
  return hostProvider({
    dataDir,
    display,
    ...(ids ? { user: { uid: Number(ids[1]), gid: Number(ids[2]) } } : {}),
  });
}

async function docker(
  options: ProviderFromEnvironmentOptions,
  why: string,
  required: boolean,
): Promise<ChosenProvider | { missing: string }> {
  const image = await computerImageRef(options.imageEnv ? { env: options.imageEnv } : {});
  const check = await Promise.race([
    checkDockerHost({ image }),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), options.dockerAnswerMs ?? 3000).unref()),
  ]);
  const noEngine =
    check === undefined
      ? `no Docker engine answers within ${(options.dockerAnswerMs ?? 3000) / 1000} s`
      : engineMissing(check.missing);
  if (noEngine) {
    if (!required) return { missing: noEngine };
    throw new AgentComputerError(
      "UNAVAILABLE",
      `${why} means Docker, but ${noEngine}; start dockerd or set DOCKER_HOST.`,
    );
  }
  const engine = check as NonNullable<typeof check>;
  if (options.whenImageMissing === "refuse") {
    if (engine.missing)
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The computer image ${image} is not built on this Docker engine. Build it once before starting the server: run agent-computer-mcp --prepare (or npx @agent-computer/mcp-server --prepare) in a terminal, with the same environment so it builds the same image; it takes a few minutes and prints its progress.`,
        { details: { image } },
      );
    return {
      name: "docker",
      provider: dockerProvider({ docker: engine.docker, dataDir: options.dataDir, image }),
      reason: `${why}: a Docker engine answers; computer image ${image}`,
    };
  }
  const built = await buildComputerImage({
    docker: engine.docker,
    image,
    onProgress: (p) => {
      // Only the slow stages are worth a line; a present image needs none.
      const slow = p.stage === "base-image" || p.stage === "build";
      if (slow && (p.status === "started" || p.status === "done"))
        options.log?.(`image ${p.stage}: ${p.message} (${p.elapsedMs} ms)`);
    },
  });
  return {
    name: "docker",
    provider: dockerProvider({ docker: engine.docker, dataDir: options.dataDir, image }),
    reason: `${why}: a Docker engine answers; computer image ${built.image}${built.built ? " (built now)" : ""}`,
  };
}

/** The engine's absence, told apart from a missing image (which is built). */
function engineMissing(missing: string | undefined): string | undefined {
  return missing?.startsWith("no Docker engine") ? missing.replace(/; start dockerd.*$/, "") : undefined;
}

function required(env: Environment, provider: string, variable: string, what: string): string {
  const value = env[variable]?.trim();
  if (!value) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `SANDBOX_PROVIDER=${provider} needs ${variable} (${what}); it is not set.`,
      { details: { variable } },
    );
  }
  return value;
}

function optional(env: Environment, variable: string): string | undefined {
  const value = env[variable]?.trim();
  return value ? value : undefined;
}

async function remote(
  name: Exclude<SandboxProviderName, "docker" | "host">,
  env: Environment,
): Promise<SandboxProvider> {
  switch (name) {
    case "fake":
      return createFakeProvider();
    case "kubernetes":
      // The provider reads its KUBERNETES_SANDBOX_* variables (and KUBECONFIG) itself.
      required(env, name, "KUBERNETES_SANDBOX_NAMESPACE", "the namespace computer pods run in; it must exist");
      return kubernetesProvider({}, env);
    case "e2b":
      required(env, name, "E2B_API_KEY", "the API key of the team that owns the template");
      required(env, name, "E2B_TEMPLATE", "the computer template built in that team");
      return e2bProvider({}, env);
    case "novita": {
      // Novita has no stock computer template: its own is required (SANDBOX_TEMPLATE names another).
      required(env, name, "NOVITA_API_KEY", "the account's API key");
      const template = optional(env, "SANDBOX_TEMPLATE") ?? optional(env, "NOVITA_TEMPLATE");
      if (!template) required(env, name, "NOVITA_TEMPLATE", "the computer template built for Novita");
      return novitaProvider(template ? { template } : {}, env);
    }
    case "daytona": {
      const apiUrl = optional(env, "DAYTONA_API_URL");
      const target = optional(env, "DAYTONA_TARGET");
      const snapshot = optional(env, "DAYTONA_SNAPSHOT");
      return daytonaProvider({
        apiKey: required(env, name, "DAYTONA_API_KEY", "the organization's API key"),
        ...(apiUrl ? { apiUrl } : {}),
        ...(target ? { target } : {}),
        ...(snapshot ? { snapshot } : {}),
      } as Parameters<typeof daytonaProvider>[0]);
    }
    case "boat":
    case "box": {
      // Boat was called Box: its BOX_* names are still read.
      const either = (boat: string, box: string) => optional(env, boat) ?? optional(env, box);
      const snapshot = either("BOAT_SNAPSHOT", "BOX_SNAPSHOT");
      const apiUrl = either("BOAT_API_URL", "BOX_API_URL");
      const apiKey =
        either("BOAT_API_KEY", "BOX_API_KEY") ?? required(env, name, "BOAT_API_KEY", "the account's API key");
      return boatProvider({ apiKey, ...(apiUrl ? { baseUrl: apiUrl } : {}), ...(snapshot ? { snapshot } : {}) }, {});
    }
    case "boxd": {
      // The provider reads BOXD_API_KEY, BOXD_ORG, BOXD_API_URL and BOXD_TOKEN_URL itself.
      required(env, name, "BOXD_API_KEY", "the organisation's API key");
      const snapshot = optional(env, "BOXD_SNAPSHOT");
      return boxdProvider(snapshot ? { snapshot } : {}, env);
    }
    case "createos": {
      // The provider reads CREATEOS_SANDBOX_API_KEY, CREATEOS_SANDBOX_BASE_URL and CREATEOS_ROOTFS itself.
      required(env, name, "CREATEOS_SANDBOX_API_KEY", "the account's API key");
      required(env, name, "CREATEOS_ROOTFS", "the rootfs or template holding the computer image's tools");
      // Loaded with import(): the package is ESM only (its SDK is), and this module is also built as CommonJS.
      const { createosProvider } = await import("@agent-computer/provider-createos");
      return createosProvider({}, env);
    }
    case "railway": {
      // The provider reads RAILWAY_API_TOKEN (or a project's RAILWAY_TOKEN) and the project's ids itself.
      if (!optional(env, "RAILWAY_TOKEN")) required(env, name, "RAILWAY_API_TOKEN", "an account or team token");
      required(env, name, "RAILWAY_PROJECT_ID", "the project computers are made in");
      required(env, name, "RAILWAY_ENVIRONMENT_ID", "the project's environment");
      const image = required(env, name, "RAILWAY_IMAGE", "the computer image in a registry Railway pulls from");
      return railwayProvider({ image }, env);
    }
  }
}
