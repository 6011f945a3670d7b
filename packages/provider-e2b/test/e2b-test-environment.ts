import { randomBytes } from "node:crypto";
import type { Machine } from "@agent-computer/core";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { chooseTestProvider, closeEmulatorAfterAll } from "@agent-computer/testing/provider-test";
import { CommandExitError, Sandbox } from "e2b";
import { type E2bProviderOptions, e2bProvider, novitaProvider } from "../src/index.js";
import { E2bEmulator, type E2bEmulatorOptions } from "../src/testing/index.js";

/** The template the emulator maps to the computer image. */
export const TEST_TEMPLATE = "agent-computer-test";

type EmulatorProviderOptions = Partial<E2bProviderOptions> & {
  emulator: E2bEmulator;
  apiKey: string;
  image?: string;
  docker?: unknown;
};

/**
 * E2B as this package's suites run it: the real `e2b` SDK (or Novita's
 * `novita-sandbox`, for the novita flavour) against the
 * loopback emulator, whose sandboxes are containers of the computer image
 * on this machine's Docker engine. The emulator starts here and closes
 * when the file's tests end; without the engine or the image the result
 * says what is missing and `suite` is reported (failing under CI). When
 * the file's tests end, every exchange must have kept to E2B's published
 * definition (the emulator's recorder), or the file fails.
 */
export function e2bTestEnvironment(
  suite?: string,
  flavour: "e2b" | "novita" = "e2b",
  emulatorOptions: Partial<Omit<E2bEmulatorOptions, "docker" | "apiKey">> = {},
) {
  const make = flavour === "novita" ? novitaProvider : e2bProvider;
  return chooseTestProvider(
    {
      kind: flavour,
      async check() {
        const host = await checkDockerHost();
        const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
        const emulator = new E2bEmulator({
          templates: { [TEST_TEMPLATE]: host.image },
          ...emulatorOptions,
          docker: host.docker,
          apiKey,
        });
        if (!host.missing) {
          await emulator.start();
          closeEmulatorAfterAll(emulator);
        }
        return { ...host, emulator, apiKey };
      },
      // The environment is never read: every setting is passed.
      create: ({ emulator, apiKey, image: _image, docker: _docker, ...options }: EmulatorProviderOptions) =>
        make(
          {
            apiKey,
            template: TEST_TEMPLATE,
            apiUrl: emulator.apiUrl,
            sandboxUrl: emulator.sandboxUrl,
            portUrl: (id, port) => emulator.portUrl(id, port),
            controlPlaneDeadlineMs: 5_000,
            ...options,
          },
          {},
        ),
    },
    suite,
  );
}

/**
 * Runs `script` as the sandbox's root (envd's `user: "root"`, as E2B gives
 * it) through the real SDK, beside the provider: what a test reads that the
 * bot's user may not. Its exit code and its output, stdout then stderr.
 */
export async function runAsSandboxRoot(
  emulator: E2bEmulator,
  apiKey: string,
  machine: Machine,
  script: string,
): Promise<{ exitCode: number; out: string }> {
  const sandbox = await Sandbox.connect(machine.ref.slice(machine.ref.indexOf(":") + 1), {
    apiKey,
    apiUrl: emulator.apiUrl,
    sandboxUrl: emulator.sandboxUrl,
    timeoutMs: 3_600_000,
  });
  const result = await sandbox.commands
    .run(script, { user: "root" })
    .catch((error: unknown) => (error instanceof CommandExitError ? error : Promise.reject(error)));
  return { exitCode: result.exitCode, out: `${result.stdout.trim()}${result.stderr.trim()}` };
}
