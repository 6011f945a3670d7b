import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import {
  AgentComputerError,
  COMPUTER_LABELS,
  loggerOf,
  type ProviderCapabilities,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { abortable, defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { HOSTED_COMPUTER_CAPABILITIES, SERVICE_ID_PATTERN } from "@agent-computer/provider-kit";
import { Daytona, type Sandbox } from "@daytonaio/sdk";
import { daytonaFailure, isAuthFailure, isTransient, statusOf } from "./daytona-failure.js";
import { DaytonaMachine } from "./daytona-machine.js";
import type { DaytonaMachineHost } from "./daytona-machine-host.js";
import { daytonaNetworkOf } from "./daytona-network.js";
import { type DaytonaProviderOptions, daytonaProviderOptionsSchema } from "./daytona-provider-options.js";
import { ensureStarted } from "./sandbox-start.js";

/**
 * Desktops, their page browser and terminal through the shared
 * LinuxDesktopRuntime over the toolbox and signed preview URLs; stop keeps
 * the sandbox (stopped or archived); the home is a folder inside it,
 * copied in and out; sandboxes bill while they run.
 */
export const DAYTONA_CAPABILITIES: ProviderCapabilities = {
  ...HOSTED_COMPUTER_CAPABILITIES,
  // A spec's policy becomes the service's network settings, enforced by its runner (daytona-network.ts).
  egress: true,
};

/** Marks one provision's sandbox, so one whose create answer was lost can still be found (and removed). */
const PROVISION_LABEL = "agent-computer.org/provision-id";

/**
 * Computers as Daytona sandboxes (docs/architecture.md §9), on the real
 * `@daytonaio/sdk`: created from a snapshot or image of the computer image
 * with auto-stop off and no public previews; commands through the
 * toolbox's sessions API; ports through signed preview URLs. A missing
 * sandbox is "gone" (the runtime replaces it and restores the home);
 * transient answers while a sandbox changes state are retried within the
 * call's deadline; a refused API key is an error, never "gone".
 */
export function daytonaProvider(options: DaytonaProviderOptions): SandboxProvider {
  const parsed = parseInput(daytonaProviderOptionsSchema, options, "DaytonaProviderOptions");
  const secrets = new Set<string>([parsed.apiKey]);
  // apiUrl always explicit: the SDK otherwise reads DAYTONA_API_URL and refuses when a .env also sets it.
  const daytona = new Daytona({
    apiKey: parsed.apiKey,
    apiUrl: parsed.apiUrl,
    target: parsed.target,
    requestTimeoutMs: parsed.requestTimeoutMs,
    useDeprecatedPolling: parsed.stateUpdates === "polling",
  });
  const host: DaytonaMachineHost = { options: parsed, secrets, stagingRoot: tmpdir() };

  const machineOf = (sandbox: Sandbox, screenLimit?: number) =>
    new DaytonaMachine(
      host,
      sandbox,
      sandbox.labels?.[COMPUTER_LABELS.workspacePath] ?? parsed.workspacePath,
      screenLimit ?? (Number(sandbox.labels?.[COMPUTER_LABELS.screenLimit] ?? parsed.screenLimit) || 0),
    );
  const startContext = (ref: string, signal: AbortSignal) => ({
    ref,
    secrets,
    signal,
    timeoutMs: parsed.startTimeoutMs,
  });

  /** Repeats a control-plane call through transient answers, until the start timeout. */
  const retrying = async <T>(signal: AbortSignal, call: () => Promise<T>): Promise<T> => {
    const until = Date.now() + parsed.startTimeoutMs;
    for (;;) {
      try {
        return await call();
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (AgentComputerError.is(error) || isAuthFailure(error) || !isTransient(error) || Date.now() >= until) {
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };

  const findByLabels = async (labels: Record<string, string>, signal: AbortSignal): Promise<Sandbox[]> =>
    retrying(signal, async () => {
      const found: Sandbox[] = [];
      for await (const sandbox of daytona.list({ labels })) found.push(sandbox);
      return found;
    });

  return defineSandboxProvider({
    kind: "daytona",
    capabilities: DAYTONA_CAPABILITIES,
    defaults: parsed,
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("daytona", id, SERVICE_ID_PATTERN, "<sandbox id>")[0],

    async provision({ spec, image, context, signal }) {
      // Refused here, before any request, when the service cannot hold the policy.
      const network = daytonaNetworkOf(spec.egress);
      const provisionId = randomBytes(8).toString("hex");
      const labels = {
        ...spec.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: spec.computerId,
        [COMPUTER_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(spec.screenLimit),
        [COMPUTER_LABELS.workspacePath]: parsed.workspacePath,
        [PROVISION_LABEL]: provisionId,
      };
      const resources = {
        cpu: spec.resources?.cpus === undefined ? parsed.resources.cpu : Math.max(1, Math.ceil(spec.resources.cpus)),
        memory:
          spec.resources?.memoryMb === undefined
            ? parsed.resources.memory
            : Math.max(1, Math.ceil(spec.resources.memoryMb / 1024)),
        disk: parsed.resources.disk,
      };
      const seconds = Math.max(1, Math.floor(parsed.startTimeoutMs / 1000));
      const common = {
        labels,
        // No HOME here: the toolbox daemon takes the sandbox's HOME for its
        // own folder (.daytona: every command's script, stdin and log), which
        // would then sit in the home and go out in every export. Each command
        // gets HOME instead (DaytonaMachine.runCommand).
        envVars: { ...parsed.envVars },
        // Daytona stops a sandbox after 15 idle minutes by default, mid-run for an agent: off.
        autoStopInterval: 0,
        public: false,
        ...network,
      };
      let sandbox: Sandbox | undefined;
      try {
        // A spec's image wins; else the configured snapshot (its resources are the snapshot's); else the image.
        const creating =
          spec.image === undefined && parsed.snapshot
            ? daytona.create({ ...common, snapshot: parsed.snapshot }, { timeout: seconds })
            : daytona.create({ ...common, image, resources }, { timeout: seconds });
        // The caller's deadline or abort ends the wait; a sandbox made after it is removed.
        signal.addEventListener("abort", () => void creating.then((made) => made.delete(60)).catch(() => {}), {
          once: true,
        });
        sandbox = await abortable(creating, signal);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (isAuthFailure(error) || (statusOf(error) !== undefined && !isTransient(error))) {
          throw daytonaFailure(error, "create a sandbox", secrets);
        }
        // The create may have happened with its answer or its wait lost: find it by its mark.
        const [found] = await findByLabels({ [PROVISION_LABEL]: provisionId }, signal).catch(() => []);
        if (!found) throw daytonaFailure(error, "create a sandbox", secrets);
        sandbox = found;
      }
      const ref = `daytona:${sandbox.id}`;
      try {
        await ensureStarted(sandbox, startContext(ref, signal));
      } catch (error) {
        await sandbox.delete(30).catch(() => {});
        throw error;
      }
      const machine = machineOf(sandbox, spec.screenLimit);
      try {
        // The home folder, made as the sandbox's user; also the first proof the toolbox answers.
        await machine.makeHome(context);
      } catch (error) {
        await sandbox.delete(30).catch(() => {});
        throw error;
      }
      loggerOf(context).info("daytona machine provisioned", { ref, homeKey: spec.homeKey, image });
      return machine;
    },

    async reconnect(id, { ref, signal }) {
      let sandbox: Sandbox;
      try {
        sandbox = await retrying(signal, () => daytona.get(id));
      } catch (error) {
        if (statusOf(error) === 404) return "gone";
        throw daytonaFailure(error, `reconnect ${ref}`, secrets);
      }
      // Not one of ours, or on its way out: never drive it.
      if (sandbox.labels?.[COMPUTER_LABELS.managed] !== "true") return "gone";
      if (sandbox.state === "destroyed" || sandbox.state === "destroying") return "gone";
      try {
        await ensureStarted(sandbox, startContext(ref, signal));
      } catch (error) {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return "gone";
        throw error;
      }
      return machineOf(sandbox);
    },

    async list({ labels, running, signal }) {
      try {
        const found = await findByLabels({ ...labels, [COMPUTER_LABELS.managed]: "true" }, signal);
        return found
          .filter((sandbox) => sandbox.state !== "destroyed" && sandbox.state !== "destroying")
          .filter((sandbox) => !running || sandbox.state === "started")
          .sort(
            (a, b) => String(a.createdAt ?? "").localeCompare(String(b.createdAt ?? "")) || a.id.localeCompare(b.id),
          )
          .map((sandbox) => `daytona:${sandbox.id}` as const);
      } catch (error) {
        throw daytonaFailure(error, "list sandboxes", secrets);
      }
    },
  });
}
