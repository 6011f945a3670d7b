import { chmod } from "node:fs/promises";
import { reportMissingProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { missingDisplayPrograms } from "../src/display-stack.js";
import type { HostProviderOptions, HostUser } from "../src/host-provider-options.js";

/** The PATH host computers get in tests: system folders only (a root-only tool folder, pyenv's, is not the user's). */
export const TEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * An ordinary user for a host computer's commands when the tests run as
 * root (CI machines do): a desktop never runs as root. uid 1000 needs no
 * passwd entry for what the tests run.
 */
export const TEST_USER: HostUser | undefined = process.getuid?.() === 0 ? { uid: 1000, gid: 1000 } : undefined;

export interface HostTestEnvironment {
  readonly missing?: string;
  /** Options for a provider on a fresh data folder of this file, readable by the computer's user. */
  options(extra?: Partial<HostProviderOptions>): Promise<HostProviderOptions>;
}

/**
 * What host computer suites need on this machine: Linux, and for a private
 * display the display stack (`.ci/display-setup.sh` installs it). When it
 * is missing the suite fails under CI and is skipped elsewhere
 * (`reportMissingProvider`).
 */
export async function hostTestEnvironment(suite: string, display: "none" | "private"): Promise<HostTestEnvironment> {
  let missing: string | undefined;
  if (process.platform !== "linux") missing = `host computers run on Linux only (this is ${process.platform})`;
  else if (display === "private") {
    const programs = await missingDisplayPrograms(TEST_PATH);
    if (programs.length > 0)
      missing = `the display stack lacks ${programs.map((p) => p.program).join(", ")} (run .ci/display-setup.sh)`;
  }
  if (missing) {
    reportMissingProvider(suite, { kind: "host", missing });
    return { missing, options: () => Promise.reject(new Error(missing)) };
  }
  return {
    options: async (extra = {}) => {
      const dataDir = await temporaryDataDir("host-computers-test-");
      // mkdtemp makes it 0700: the computer's user must reach the homes below it.
      await chmod(dataDir, 0o755);
      return { dataDir, display, path: TEST_PATH, ...(TEST_USER ? { user: TEST_USER } : {}), ...extra };
    },
  };
}
