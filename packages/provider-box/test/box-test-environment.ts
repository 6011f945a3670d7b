import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider, closeEmulatorAfterAll } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { type BoatProviderOptions, boatProvider } from "../src/index.js";
import { BoatEmulator, type BoatEmulatorOptions } from "../src/testing/index.js";

/** The key the emulator takes; tests grep logs, events, errors and homes for it. */
export const TEST_API_KEY = `boat_test_${"k3y".repeat(12)}`;
/** The account's environment the emulator gives a sandbox created without `noEnv`. */
export const ACCOUNT_ENV = { ACCOUNT_SECRET: `account-secret-${"s3cr3t".repeat(4)}` };

type EmulatorProviderOptions = Partial<BoatProviderOptions> & {
  emulator: BoatEmulator;
  image: string;
  docker?: unknown;
};

/**
 * Boat as this package's suites run it: the provider's client against a
 * loopback emulator held to boat-v1.yaml, whose sandboxes are containers
 * of this machine's Docker engine (the computer image is what it needs).
 * `base: "box"` speaks the legacy Box base instead of Boat's. The
 * emulator starts here; when the file's tests end it asserts that no
 * exchange left the definition, then closes (removing its containers and
 * images). Without the engine or the image the suite is reported (failing
 * under CI, skipped elsewhere).
 */
export function boxTestEnvironment(
  suite?: string,
  emulatorOptions: Partial<BoatEmulatorOptions> = {},
  base: "boat" | "box" = "boat",
) {
  return chooseTestProvider(
    {
      kind: "box",
      async check() {
        const host = await checkDockerHost();
        const emulator = new BoatEmulator({
          docker: host.docker as Docker,
          apiKey: TEST_API_KEY,
          baseImage: host.image as string,
          accountEnv: ACCOUNT_ENV,
          ...emulatorOptions,
        });
        if (!host.missing) {
          await emulator.start();
          closeEmulatorAfterAll(emulator);
        }
        return { ...host, emulator };
      },
      create: ({ emulator, image: _image, docker: _engine, ...options }: EmulatorProviderOptions) =>
        boatProvider(
          {
            apiKey: TEST_API_KEY,
            baseUrl: base === "box" ? emulator.legacyBaseUrl : emulator.baseUrl,
            retryMs: 10_000,
            ...options,
          },
          {},
        ),
    },
    suite,
  );
}
