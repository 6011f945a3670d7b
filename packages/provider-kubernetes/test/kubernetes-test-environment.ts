import { computerImageRef } from "@agent-computer/desktop-runtime";
import Docker from "dockerode";
import { afterAll, describe, it } from "vitest";
import { KubernetesWireFixture } from "./kubernetes-wire-fixture.js";

/** The namespace the fixture knows; every other one is missing. */
export const TEST_NAMESPACE = "agent-computer-test";

/** The engine, image and a running wire fixture the Kubernetes suites need, or why they are missing. */
export interface KubernetesTestEnvironment {
  readonly missing?: string;
  readonly docker: Docker;
  readonly image: string;
  readonly fixture: KubernetesWireFixture;
}

/**
 * Finds the engine and the computer image and starts a wire fixture backed
 * by them (closed when the file's tests end). Without them a suite is
 * skipped with the reason, except under CI, where it fails: CI must never
 * pass by not testing.
 */
export async function kubernetesTestEnvironment(): Promise<KubernetesTestEnvironment> {
  const docker = new Docker();
  const image = await computerImageRef();
  const missing = await docker.version().then(
    () =>
      docker
        .getImage(image)
        .inspect()
        .then(
          () => undefined,
          () => `the computer image ${image} is not built (run: npx agent-computer-image build)`,
        ),
    (error: Error) => `no Docker engine answers (${error.message}); run .ci/docker-setup.sh`,
  );
  const fixture = new KubernetesWireFixture(docker, [TEST_NAMESPACE]);
  if (!missing) {
    await fixture.start();
    afterAll(() => fixture.close(), 120_000);
  }
  return { missing, docker, image, fixture };
}

/** Registers a suite that fails under CI (or is skipped elsewhere) because the engine or image is missing. */
export function reportMissingEngine(suite: string, missing: string): void {
  if (process.env.CI) {
    describe(suite, () => {
      it("needs a Docker engine and the computer image", () => {
        throw new Error(`CI is set and ${missing}`);
      });
    });
  } else {
    describe.skip(`${suite} (skipped: ${missing})`, () => {
      it("needs a Docker engine and the computer image", () => {});
    });
  }
}
