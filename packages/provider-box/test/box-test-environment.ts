import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll } from "vitest";
import { type BoxProviderOptions, boxProvider } from "../src/index.js";
import { BoxEmulator, type BoxEmulatorOptions } from "../src/testing/index.js";

/** The key the emulator takes; tests grep logs, events, errors and homes for it. */
export const TEST_API_KEY = `box_test_${"k3y".repeat(12)}`;
/** The account's environment the emulator gives a box created without `noEnv`. */
export const ACCOUNT_ENV = { ACCOUNT_SECRET: `account-secret-${"s3cr3t".repeat(4)}` };

type EmulatorProviderOptions = Partial<BoxProviderOptions> & { emulator: BoxEmulator; image: string; docker?: unknown };

/**
 * Box as this package's suites run it: the provider's client against a
 * loopback emulator whose boxes are containers of this machine's Docker
 * engine (the computer image is what it needs). The emulator starts here
 * and closes (removing its containers and images) when the file's tests
 * end; without the engine or the image the suite is reported (failing
 * under CI, skipped elsewhere).
 */
export function boxTestEnvironment(suite?: string, emulatorOptions: Partial<BoxEmulatorOptions> = {}) {
  return chooseTestProvider(
    {
      kind: "box",
      async check() {
        const host = await checkDockerHost();
        const emulator = new BoxEmulator({
          docker: host.docker as Docker,
          apiKey: TEST_API_KEY,
          baseImage: host.image as string,
          accountEnv: ACCOUNT_ENV,
          ...emulatorOptions,
        });
        if (!host.missing) {
          await emulator.start();
          afterAll(() => emulator.close(), 120_000);
        }
        return { ...host, emulator };
      },
      create: ({ emulator, image: _image, docker: _engine, ...options }: EmulatorProviderOptions) =>
        boxProvider({ apiKey: TEST_API_KEY, baseUrl: emulator.baseUrl, retryMs: 10_000, ...options }),
    },
    suite,
  );
}
