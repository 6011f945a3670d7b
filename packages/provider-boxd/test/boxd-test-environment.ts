import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider, closeEmulatorAfterAll } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { type BoxdProviderOptions, boxdProvider } from "../src/index.js";
import { BoxdEmulator, type BoxdEmulatorOptions } from "../src/testing/index.js";

/** The key the emulator takes; tests grep logs, errors and homes for it. */
export const TEST_API_KEY = `bxd_${"T3stK3y".repeat(6)}`;
/** The organisation the key is bound to. */
export const TEST_ORG = "org-test";

type EmulatorProviderOptions = Partial<BoxdProviderOptions> & {
  emulator: BoxdEmulator;
  image: string;
  docker?: unknown;
};

/**
 * boxd as this package's suites run it: the provider's gRPC client against
 * a loopback emulator held to proto/boxd-api.proto, whose machines are
 * containers of this machine's Docker engine (the computer image is what
 * it needs). When the file's tests end it asserts that no exchange left the
 * definition, then closes (removing its containers). Without the engine or
 * the image the suite is reported: failing under CI, skipped elsewhere.
 */
export function boxdTestEnvironment(suite?: string, emulatorOptions: Partial<BoxdEmulatorOptions> = {}) {
  return chooseTestProvider(
    {
      kind: "boxd",
      async check() {
        const host = await checkDockerHost();
        const emulator = new BoxdEmulator({
          docker: host.docker as Docker,
          baseImage: host.image as string,
          apiKeys: { [TEST_API_KEY]: TEST_ORG },
          ...emulatorOptions,
        });
        if (!host.missing) {
          await emulator.start();
          closeEmulatorAfterAll(emulator);
        }
        return { ...host, emulator };
      },
      create: ({ emulator, image: _image, docker: _engine, ...options }: EmulatorProviderOptions) =>
        boxdProvider(
          {
            apiKey: TEST_API_KEY,
            apiUrl: emulator.apiUrl,
            tokenUrl: emulator.tokenUrl,
            retryMs: 10_000,
            publicUrl: (name) => emulator.publicUrlOf(name),
            ...options,
          },
          {},
        ),
    },
    suite,
  );
}
