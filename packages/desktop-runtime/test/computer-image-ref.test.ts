import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  COMPUTER_IMAGE_REPOSITORY,
  COMPUTER_PATH,
  computerImageDir,
  computerImageFiles,
  computerImageRef,
  computerImageTag,
} from "../src/index.js";

describe("computer image ref", () => {
  it("tags with the package version and a hash of the build inputs, which extras change", async () => {
    const tag = await computerImageTag();
    expect(tag).toMatch(/^\d+\.\d+\.\d+[^-]*-[0-9a-f]{12}$/);
    expect(await computerImageTag()).toBe(tag);
    expect(await computerImageTag({ brave: true })).not.toBe(tag);
    expect(await computerImageTag({ uv: true })).not.toBe(tag);
  });

  it("hashes the Dockerfile, the seccomp profile and the runtime files, not the README", async () => {
    const files = await computerImageFiles();
    expect(files).toContain("Dockerfile");
    expect(files).toContain("seccomp/chromium.json");
    expect(files).toContain("runtime/bin/agent-computer-chromium");
    expect(files.some((f) => f.endsWith("README.md"))).toBe(false);
  });

  it("lets AGENT_COMPUTER_IMAGE and AGENT_COMPUTER_IMAGE_TAG select another image", async () => {
    expect(await computerImageRef({ env: {} })).toBe(`${COMPUTER_IMAGE_REPOSITORY}:${await computerImageTag()}`);
    expect(await computerImageRef({ env: { AGENT_COMPUTER_IMAGE_TAG: "dev" } })).toBe(
      `${COMPUTER_IMAGE_REPOSITORY}:dev`,
    );
    expect(
      await computerImageRef({
        env: { AGENT_COMPUTER_IMAGE: "registry.example/computer:1", AGENT_COMPUTER_IMAGE_TAG: "x" },
      }),
    ).toBe("registry.example/computer:1");
  });
});

describe("COMPUTER_PATH", () => {
  it("is the image's own PATH, so a service that builds the environment itself finds the desktop command", async () => {
    const dockerfile = await readFile(join(computerImageDir(), "Dockerfile"), "utf8");
    expect(dockerfile).toContain(`ENV PATH=${COMPUTER_PATH}\n`);
    expect(COMPUTER_PATH.split(":")[0]).toBe("/opt/agent-computer/bin");
  });
});
