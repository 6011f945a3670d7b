import { AgentComputerError } from "@agent-computer/core";
import type { KubernetesProviderOptions } from "./kubernetes-provider-options.js";

/** The environment variables `kubernetesProvider` reads, each with the option it sets. */
export const KUBERNETES_SANDBOX_ENV = {
  namespace: "KUBERNETES_SANDBOX_NAMESPACE",
  image: "KUBERNETES_SANDBOX_COMPUTER_IMAGE",
  runtimeClassName: "KUBERNETES_SANDBOX_RUNTIME_CLASS_NAME",
  cpuLimit: "KUBERNETES_SANDBOX_CPU_LIMIT",
  memoryLimit: "KUBERNETES_SANDBOX_MEMORY_LIMIT",
  podLabels: "KUBERNETES_SANDBOX_POD_LABELS",
  podAnnotations: "KUBERNETES_SANDBOX_POD_ANNOTATIONS",
  readyTimeoutMs: "KUBERNETES_SANDBOX_READY_TIMEOUT_MS",
  homeClaim: "KUBERNETES_SANDBOX_HOME_CLAIM",
  homeColocateNamespace: "KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE",
  homeColocateLabels: "KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS",
  objectStorageBucket: "OBJECT_STORAGE_BUCKET",
} as const;

/**
 * Reads `KUBERNETES_SANDBOX_*` variables into provider options. Unset or
 * empty variables are left out. Labels and annotations are JSON objects of
 * strings; anything else is INVALID_ARGUMENT naming the variable, so an
 * operator finds the typo without reading a stack trace.
 */
export function kubernetesOptionsFromEnv(
  env: Record<string, string | undefined> = process.env,
): Partial<KubernetesProviderOptions> {
  const options: Partial<KubernetesProviderOptions> = {};
  const text = (key: keyof typeof KUBERNETES_SANDBOX_ENV) => {
    const value = env[KUBERNETES_SANDBOX_ENV[key]]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
  const plain = [
    "namespace",
    "image",
    "runtimeClassName",
    "cpuLimit",
    "memoryLimit",
    "homeClaim",
    "homeColocateNamespace",
    "objectStorageBucket",
  ] as const;
  for (const key of plain) {
    const value = text(key);
    if (value !== undefined) options[key] = value;
  }
  for (const key of ["podLabels", "podAnnotations", "homeColocateLabels"] as const) {
    const value = text(key);
    if (value !== undefined) options[key] = stringRecord(KUBERNETES_SANDBOX_ENV[key], value);
  }
  const timeout = text("readyTimeoutMs");
  if (timeout !== undefined) {
    if (!/^\d+$/.test(timeout) || Number(timeout) <= 0 || !Number.isSafeInteger(Number(timeout))) {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Invalid ${KUBERNETES_SANDBOX_ENV.readyTimeoutMs}: expected a positive whole number of milliseconds, got ${JSON.stringify(timeout)}.`,
      );
    }
    options.readyTimeoutMs = Number(timeout);
  }
  return options;
}

function stringRecord(variable: string, value: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid ${variable}: not JSON (${(error as Error).message}); expected an object of strings such as {"team":"qa"}.`,
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid ${variable}: expected a JSON object of strings such as {"team":"qa"}.`,
    );
  }
  for (const [key, item] of Object.entries(parsed)) {
    if (typeof item !== "string") {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Invalid ${variable}: the value of ${JSON.stringify(key)} is not a string; every value must be a string.`,
      );
    }
  }
  return parsed as Record<string, string>;
}
