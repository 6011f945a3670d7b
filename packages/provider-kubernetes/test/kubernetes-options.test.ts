import { isTransientProfilePath, TRANSIENT_PROFILE_NAMES } from "@agent-computer/checkpoint";
import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { kubernetesOptionsFromEnv, kubernetesProvider } from "../src/index.js";

const kubeConfig = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:1", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: not-a-real-token } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

function thrown(fn: () => unknown): AgentComputerError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentComputerError);
    return error as AgentComputerError;
  }
  throw new Error("expected a throw");
}

describe("kubernetes provider settings", () => {
  it("reads KUBERNETES_SANDBOX_* variables, labels and annotations as JSON objects of strings", () => {
    expect(
      kubernetesOptionsFromEnv({
        KUBERNETES_SANDBOX_NAMESPACE: "computers",
        KUBERNETES_SANDBOX_COMPUTER_IMAGE: "registry.local/computer@sha256:abc",
        KUBERNETES_SANDBOX_RUNTIME_CLASS_NAME: "gvisor",
        KUBERNETES_SANDBOX_CPU_LIMIT: "2",
        KUBERNETES_SANDBOX_MEMORY_LIMIT: "4Gi",
        KUBERNETES_SANDBOX_POD_LABELS: '{"team":"qa"}',
        KUBERNETES_SANDBOX_POD_ANNOTATIONS: '{"cost-center":"42"}',
        KUBERNETES_SANDBOX_READY_TIMEOUT_MS: "30000",
        KUBERNETES_SANDBOX_CPU_LIMIT_UNRELATED: "ignored",
      }),
    ).toEqual({
      namespace: "computers",
      image: "registry.local/computer@sha256:abc",
      runtimeClassName: "gvisor",
      cpuLimit: "2",
      memoryLimit: "4Gi",
      podLabels: { team: "qa" },
      podAnnotations: { "cost-center": "42" },
      readyTimeoutMs: 30_000,
    });
  });

  it("reads the mounted-home variables of the self-host document", () => {
    expect(
      kubernetesOptionsFromEnv({
        KUBERNETES_SANDBOX_HOME_CLAIM: "app-data",
        KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE: "apps",
        KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS: '{"app":"api"}',
        OBJECT_STORAGE_BUCKET: "homes",
      }),
    ).toEqual({
      homeClaim: "app-data",
      homeColocateNamespace: "apps",
      homeColocateLabels: { app: "api" },
      objectStorageBucket: "homes",
    });
    const bad = thrown(() => kubernetesOptionsFromEnv({ KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS: "app=api" }));
    expect(bad.message).toContain("KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS");
  });

  it("names the variable when its JSON is invalid or not an object of strings", () => {
    const bad = thrown(() => kubernetesOptionsFromEnv({ KUBERNETES_SANDBOX_POD_LABELS: "{team: qa}" }));
    expect(bad.code).toBe("INVALID_ARGUMENT");
    expect(bad.message).toContain("KUBERNETES_SANDBOX_POD_LABELS");
    const notStrings = thrown(() => kubernetesOptionsFromEnv({ KUBERNETES_SANDBOX_POD_ANNOTATIONS: '{"n":1}' }));
    expect(notStrings.message).toContain("KUBERNETES_SANDBOX_POD_ANNOTATIONS");
    const array = thrown(() => kubernetesOptionsFromEnv({ KUBERNETES_SANDBOX_POD_LABELS: '["a"]' }));
    expect(array.message).toContain("KUBERNETES_SANDBOX_POD_LABELS");
    const timeout = thrown(() => kubernetesOptionsFromEnv({ KUBERNETES_SANDBOX_READY_TIMEOUT_MS: "soon" }));
    expect(timeout.message).toContain("KUBERNETES_SANDBOX_READY_TIMEOUT_MS");
  });

  it("explicit options win over the environment, and bad values name their field", () => {
    const env = { KUBERNETES_SANDBOX_NAMESPACE: "from-env", KUBERNETES_SANDBOX_POD_LABELS: '{"bad key!":"x"}' };
    const error = thrown(() => kubernetesProvider({ kubeConfig, namespace: "explicit" }, env));
    expect(error.message).toContain("podLabels");
    expect(thrown(() => kubernetesProvider({ kubeConfig }, {})).message).toContain("KUBERNETES_SANDBOX_NAMESPACE");
    expect(thrown(() => kubernetesProvider({ kubeConfig, namespace: "Bad_NS" }, {})).message).toContain("namespace");
    expect(thrown(() => kubernetesProvider({ kubeConfig, namespace: "ok", cpuLimit: "two" }, {})).message).toContain(
      "cpuLimit",
    );
    expect(
      kubernetesProvider({ kubeConfig, namespace: "explicit" }, { KUBERNETES_SANDBOX_NAMESPACE: "env" }).kind,
    ).toBe("kubernetes");
  });

  it("refuses a ref of another kind or shape, and a malformed kubeconfig", async () => {
    const provider = kubernetesProvider({ kubeConfig, namespace: "computers" }, {});
    await expect(provider.reconnect("docker:abc")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(provider.reconnect("kubernetes:no-slash")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(provider.reconnect("kubernetes:other/ac-x-1")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(thrown(() => kubernetesProvider({ kubeConfig: "::: not yaml", namespace: "x" }, {})).code).toBe(
      "INVALID_ARGUMENT",
    );
  });

  it("leaves out exactly the browser-profile names core's packHome leaves out", () => {
    for (const name of TRANSIENT_PROFILE_NAMES)
      expect(isTransientProfilePath(`.browser-profiles/p/${name}`)).toBe(true);
  });
});
