import { constants, existsSync } from "node:fs";
import { access, mkdtemp, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";
import { checkDesktopUser, checkHostPlatform, DISPLAY_PROGRAMS, missingDisplayPrograms } from "../src/display-stack.js";
import { hostProvider } from "../src/host-provider.js";
import { TEST_PATH, TEST_USER } from "./host-test-environment.js";

/** A folder to use as PATH holding links to every display program this machine has, except `hidden`. */
async function pathWithout(hidden: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "host-path-"));
  for (const { program } of DISPLAY_PROGRAMS) {
    if (program === hidden) continue;
    for (const folder of TEST_PATH.split(":")) {
      const found = await access(join(folder, program), constants.X_OK).then(
        () => true,
        () => false,
      );
      if (!found) continue;
      await symlink(join(folder, program), join(dir, program));
      break;
    }
  }
  return dir;
}

describe("host computers: what the host lacks is named, nothing is installed", () => {
  it("a provision without Xvfb on the lookup path is UNSUPPORTED naming Xvfb and the Debian package", async () => {
    const dataDir = await temporaryDataDir("host-display-check-");
    const path = await pathWithout("Xvfb");
    const provider = hostProvider({ dataDir, display: "private", path, ...(TEST_USER ? { user: TEST_USER } : {}) });
    const refused = await provider.provision({ computerId: "no-xvfb", homeKey: "no-xvfb" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ name: "AgentComputerError", code: "UNSUPPORTED" });
    const message = (refused as Error).message;
    expect(message).toContain("Xvfb (the private X display)");
    expect(message).toMatch(/apt-get install --no-install-recommends [a-z0-9 -]*\bxvfb\b/);
    expect((refused as { details: { missingPrograms: string[] } }).details.missingPrograms).toContain("Xvfb");
    // Where the rest of the stack is installed, Xvfb is all it names.
    if ((await missingDisplayPrograms(TEST_PATH)).length === 0) {
      expect((refused as { details: { debianPackages: string[] } }).details.debianPackages).toEqual(["xvfb"]);
    }
    // Nothing was started or made for the refused computer: no home.
    expect(existsSync(join(dataDir, "host-homes", "no-xvfb"))).toBe(false);
  });

  it("display: none asks nothing of the display stack: no desktop, shell and files", async () => {
    const dataDir = await temporaryDataDir("host-display-check-");
    const provider = hostProvider({ dataDir, display: "none", path: TEST_PATH });
    expect(provider.capabilities.desktop).toBe(false);
    const machine = await provider.provision({ computerId: "bare", homeKey: "bare" });
    try {
      expect(machine.openDesktop).toBeUndefined();
      await machine.files.write("a.txt", new TextEncoder().encode("a"));
      expect(new TextDecoder().decode(await machine.files.read("a.txt"))).toBe("a");
    } finally {
      await machine.destroy();
    }
  });

  it("refuses macOS, Windows and every other system but Linux, saying what is supported", () => {
    for (const platform of ["darwin", "win32", "freebsd"] as const) {
      expect(() => checkHostPlatform(platform)).toThrow(
        expect.objectContaining({ code: "UNSUPPORTED", message: expect.stringContaining("Linux only") }),
      );
    }
    expect(() => checkHostPlatform("linux")).not.toThrow();
  });

  it("refuses a desktop for root, pointing at the user option", async () => {
    expect(() => checkDesktopUser(0)).toThrow(
      expect.objectContaining({ code: "UNSUPPORTED", message: expect.stringContaining("user ({ uid, gid })") }),
    );
    expect(() => checkDesktopUser(1000)).not.toThrow();
    if (process.getuid?.() === 0) {
      const dataDir = await temporaryDataDir("host-display-check-");
      const provider = hostProvider({ dataDir, display: "private", path: TEST_PATH });
      await expect(provider.provision({ computerId: "as-root", homeKey: "as-root" })).rejects.toMatchObject({
        code: "UNSUPPORTED",
      });
    }
  });
});
