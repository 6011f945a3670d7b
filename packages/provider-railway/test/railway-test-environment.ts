import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider, closeEmulatorAfterAll } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { type RailwayProviderOptions, railwayProvider } from "../src/index.js";
import { RailwayEmulator } from "../src/testing/index.js";

/** The token the emulator takes; tests grep logs, errors and homes for it. */
export const TEST_TOKEN = `railway_test_${"t0k3n".repeat(8)}`;

type EmulatorProviderOptions = Partial<RailwayProviderOptions> & {
  emulator: RailwayEmulator;
  image: string;
  docker?: unknown;
};

/**
 * Railway as this package's suites run it: the provider's client against
 * a loopback emulator held to the published schema's part, whose
 * deployments are containers of this machine's Docker engine with Docker
 * volumes (the computer image is what it needs). The emulator starts
 * here; when the file's tests end it asserts that no exchange left the
 * definition, then closes (removing its containers and volumes). Without
 * the engine or the image the suite is reported (failing under CI,
 * skipped elsewhere).
 */
export function railwayTestEnvironment(suite?: string) {
  return chooseTestProvider(
    {
      kind: "railway",
      async check() {
        const host = await checkDockerHost();
        const emulator = new RailwayEmulator({ docker: host.docker as Docker, token: TEST_TOKEN });
        if (!host.missing) {
          await emulator.start();
          closeEmulatorAfterAll(emulator);
        }
        return { ...host, emulator };
      },
      create: ({ emulator, image, docker: _engine, ...options }: EmulatorProviderOptions) =>
        railwayProvider(
          {
            token: TEST_TOKEN,
            projectId: emulator.projectId,
            environmentId: emulator.environmentId,
            endpoint: emulator.endpoint,
            execUrl: emulator.execUrl,
            image,
            domainUrl: (domain) => emulator.urlOfDomain(domain),
            pollMs: 200,
            retryMs: 10_000,
            ...options,
          },
          {},
        ),
    },
    suite,
  );
}
