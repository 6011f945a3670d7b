import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { afterAll } from "vitest";
import { type KubernetesProviderOptions, kubernetesProvider } from "../src/index.js";
import { KubernetesWireFixture } from "./kubernetes-wire-fixture.js";

/** The namespace the fixture knows; every other one is missing. */
export const TEST_NAMESPACE = "agent-computer-test";

type FixtureProviderOptions = Omit<KubernetesProviderOptions, "kubeConfig" | "namespace" | "image"> & {
  fixture: KubernetesWireFixture;
  image: string;
  docker?: unknown;
};

/**
 * Kubernetes as this package's suites run it: the real client against a
 * wire fixture whose pods are containers of this machine's Docker engine,
 * so the engine and the computer image are what it needs. The fixture
 * starts here and closes when the file's tests end; without the engine
 * or the image the result says what is missing and `suite` is reported
 * (failing under CI, skipped elsewhere).
 */
export function kubernetesTestEnvironment(suite?: string) {
  return chooseTestProvider(
    {
      kind: "kubernetes",
      async check() {
        const host = await checkDockerHost();
        const fixture = new KubernetesWireFixture(host.docker, [TEST_NAMESPACE]);
        if (!host.missing) {
          await fixture.start();
          afterAll(() => fixture.close(), 120_000);
        }
        return { ...host, fixture };
      },
      // The suite's own options (a seccomp profile, a timeout) on top; the environment is never read.
      create: ({ fixture, image, docker: _engine, ...options }: FixtureProviderOptions) =>
        kubernetesProvider({ ...options, kubeConfig: fixture.kubeConfig(), namespace: TEST_NAMESPACE, image }, {}),
    },
    suite,
  );
}
