import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider, closeEmulatorAfterAll } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { type DaytonaProviderOptions, daytonaProvider } from "../src/index.js";
import { DaytonaEmulator, type DaytonaEmulatorOptions } from "../src/testing/index.js";

/** The key the emulator takes; tests grep logs and errors for it. */
export const TEST_API_KEY = `dtn_test_${"k3y".repeat(12)}`;

type EmulatorProviderOptions = Partial<DaytonaProviderOptions> & {
  emulator: DaytonaEmulator;
  image: string;
  docker?: unknown;
};

/**
 * Daytona as this package's suites run it: the real `@daytonaio/sdk`
 * against a loopback emulator whose sandboxes are containers of this
 * machine's Docker engine (the computer image is what it needs). The
 * emulator starts here and closes (removing its containers) when the
 * file's tests end; without the engine or the image the suite is reported
 * (failing under CI, skipped elsewhere).
 */
export function daytonaTestEnvironment(suite?: string, emulatorOptions: Partial<DaytonaEmulatorOptions> = {}) {
  return chooseTestProvider(
    {
      kind: "daytona",
      async check() {
        const host = await checkDockerHost();
        const emulator = new DaytonaEmulator({
          docker: host.docker as Docker,
          apiKey: TEST_API_KEY,
          ...emulatorOptions,
        });
        if (!host.missing) {
          await emulator.start();
          // Every exchange of the file's tests held to Daytona's definition; the emulator closed whatever it says.
          closeEmulatorAfterAll(emulator);
        }
        return { ...host, emulator };
      },
      // The SDK with its socket.io events channel (its default), or polling where a suite says; the environment is never read.
      // Signed preview URLs are in host form: a tunnel carries the host to the emulator's proxy.
      create: ({ emulator, image, docker: _engine, ...options }: EmulatorProviderOptions) =>
        daytonaProvider({
          apiKey: TEST_API_KEY,
          apiUrl: emulator.apiUrl,
          snapshot: image,
          previewUrl: (preview) => emulator.previewTunnel(preview.url),
          ...options,
        }),
    },
    suite,
  );
}
