import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider, closeEmulatorAfterAll } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { type CreateosProviderOptions, createosProvider } from "../src/index.js";
import { CreateosEmulator, type CreateosEmulatorOptions } from "../src/testing/index.js";

/** The key the emulator takes; tests grep logs, events, errors and homes for it. */
export const TEST_API_KEY = `createos_test_${"k3y".repeat(12)}`;
/** The template the emulator's account has: the computer image. */
export const TEST_ROOTFS = "agent-computer-desktop";

type EmulatorProviderOptions = Partial<CreateosProviderOptions> & {
  emulator: CreateosEmulator;
  image: string;
  docker?: unknown;
};

/**
 * CreateOS as this package's suites run it: the provider, on the official
 * SDK, against a loopback emulator held to the operations written from
 * the SDKs' wire types, whose VMs are containers of this machine's Docker
 * engine (the computer image is what it needs). The emulator starts
 * here; when the file's tests end it asserts that no exchange left the
 * definition, then closes (removing its containers). Without the engine
 * or the image the suite is reported (failing under CI, skipped elsewhere).
 */
export function createosTestEnvironment(suite?: string, emulatorOptions: Partial<CreateosEmulatorOptions> = {}) {
  return chooseTestProvider(
    {
      kind: "createos",
      async check() {
        const host = await checkDockerHost();
        const emulator = new CreateosEmulator({
          docker: host.docker as Docker,
          apiKey: TEST_API_KEY,
          rootfs: { [TEST_ROOTFS]: host.image as string },
          // A build of a Dockerfile that starts from the computer's rootfs makes the computer image; any other fails.
          templateBuilder: (dockerfile) =>
            new RegExp(`^FROM ${TEST_ROOTFS}\\b`, "m").test(dockerfile) ? (host.image as string) : undefined,
          ...emulatorOptions,
        });
        if (!host.missing) {
          await emulator.start();
          closeEmulatorAfterAll(emulator);
        }
        return { ...host, emulator };
      },
      create: ({ emulator, image: _image, docker: _engine, ...options }: EmulatorProviderOptions) =>
        createosProvider(
          { apiKey: TEST_API_KEY, baseUrl: emulator.baseUrl, rootfs: TEST_ROOTFS, retryMs: 10_000, ...options },
          {},
        ),
    },
    suite,
  );
}
