import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import Docker from "dockerode";
import { afterAll, describe, it } from "vitest";

/** The engine and image Docker suites need, or why they are missing. */
export interface DockerTestEnvironment {
  readonly missing?: string;
  readonly docker: Docker;
  readonly image: string;
}

/**
 * Finds the engine and the computer image. Without them a suite is skipped
 * with the reason, except under CI, where it fails: CI must never pass by
 * not testing.
 */
export async function dockerTestEnvironment(): Promise<DockerTestEnvironment> {
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
  return { missing, docker, image };
}

/** Registers a suite that fails under CI (or is skipped elsewhere) because the engine or image is missing. */
export function reportMissingDocker(suite: string, missing: string): void {
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

/** A fresh data folder for one test file, removed when the file's tests end. */
export async function temporaryDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "agent-computer-docker-test-"));
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}
