import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { missingDisplayPrograms } from "@agent-computer/provider-host";
import { describe, expect, it } from "vitest";
import { providerFromEnvironment } from "../src/provider-from-environment.js";

const dataDir = () => mkdtemp(join(tmpdir(), "provider-env-"));

describe("providerFromEnvironment", () => {
  it("builds each named provider from its own variables, without asking the service anything", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ SANDBOX_PROVIDER: "fake" }, "fake"],
      [{ SANDBOX_PROVIDER: "e2b", E2B_API_KEY: "k", E2B_TEMPLATE: "t" }, "e2b"],
      [{ SANDBOX_PROVIDER: "novita", NOVITA_API_KEY: "k", SANDBOX_TEMPLATE: "t" }, "novita"],
      [
        { SANDBOX_PROVIDER: "daytona", DAYTONA_API_KEY: "k", DAYTONA_API_URL: "https://daytona.invalid/api" },
        "daytona",
      ],
      [{ SANDBOX_PROVIDER: "boat", BOAT_API_KEY: "k" }, "boat"],
      [{ SANDBOX_PROVIDER: "host" }, "host"],
      [{ SANDBOX_PROVIDER: "host", HOST_SANDBOX_DISPLAY: "none", HOST_SANDBOX_USER: "1000:1000" }, "host"],
      [{ SANDBOX_PROVIDER: "box", BOX_API_KEY: "k", BOX_API_URL: "https://box.invalid/box/v1" }, "box"],
      [{ SANDBOX_PROVIDER: "boxd", BOXD_API_KEY: "k", BOXD_ORG: "acme" }, "boxd"],
      [{ SANDBOX_PROVIDER: "createos", CREATEOS_SANDBOX_API_KEY: "k", CREATEOS_ROOTFS: "computer" }, "createos"],
      [
        {
          SANDBOX_PROVIDER: "railway",
          RAILWAY_API_TOKEN: "t",
          RAILWAY_PROJECT_ID: "p",
          RAILWAY_ENVIRONMENT_ID: "e",
          RAILWAY_IMAGE: "registry.invalid/computer:1",
        },
        "railway",
      ],
    ];
    for (const [env, kind] of cases) {
      const chosen = await providerFromEnvironment(env, { dataDir: await dataDir() });
      expect(chosen.name).toBe(kind);
      // Boat's refs keep Box's `box:` prefix, so computers recorded before the rename reconnect.
      expect(chosen.provider.kind).toBe(kind === "boat" ? "box" : kind);
      expect(chosen.reason).toBe(`SANDBOX_PROVIDER=${kind}`);
    }
  });

  it("refuses a missing key with INVALID_ARGUMENT naming the variable, and a bad variable of the provider's own", async () => {
    await expect(
      providerFromEnvironment({ SANDBOX_PROVIDER: "daytona" }, { dataDir: await dataDir() }),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      details: { variable: "DAYTONA_API_KEY" },
    });
    for (const [env, variable] of [
      [{ SANDBOX_PROVIDER: "host", HOST_SANDBOX_DISPLAY: "own" }, "HOST_SANDBOX_DISPLAY"],
      [{ SANDBOX_PROVIDER: "host", HOST_SANDBOX_USER: "computer" }, "HOST_SANDBOX_USER"],
      [{ SANDBOX_PROVIDER: "createos", CREATEOS_SANDBOX_API_KEY: "k" }, "CREATEOS_ROOTFS"],
      [{ SANDBOX_PROVIDER: "railway", RAILWAY_TOKEN: "t", RAILWAY_PROJECT_ID: "p" }, "RAILWAY_ENVIRONMENT_ID"],
      [{ SANDBOX_PROVIDER: "railway", RAILWAY_PROJECT_ID: "p", RAILWAY_ENVIRONMENT_ID: "e" }, "RAILWAY_API_TOKEN"],
    ] as const) {
      await expect(providerFromEnvironment(env, { dataDir: await dataDir() })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        details: { variable },
      });
    }
    await expect(
      providerFromEnvironment(
        {
          SANDBOX_PROVIDER: "kubernetes",
          KUBERNETES_SANDBOX_NAMESPACE: "ns",
          KUBERNETES_SANDBOX_POD_LABELS: "not json",
        },
        { dataDir: await dataDir() },
      ),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("KUBERNETES_SANDBOX_POD_LABELS"),
    });
  });

  it("unset, as a demo: the fake provider when no Docker engine answers, and says why", async () => {
    const previous = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = "tcp://127.0.0.1:9";
    try {
      const chosen = await providerFromEnvironment({}, { dataDir: await dataDir(), whenUnset: "docker-else-fake" });
      expect(chosen.name).toBe("fake");
      expect(chosen.reason).toMatch(/^SANDBOX_PROVIDER unset and no Docker engine answers/);
      // The quickstart's order: a host computer where this machine can run its desktop, else the fake, and why.
      const quickstart = await providerFromEnvironment(
        {},
        { dataDir: await dataDir(), whenUnset: "docker-else-host-else-fake" },
      );
      const hostMissing =
        process.getuid?.() === 0
          ? /no host computer either: this process runs as root/
          : (await missingDisplayPrograms(process.env.PATH ?? "")).length > 0
            ? /no host computer either: the display stack is missing .*apt-get install/
            : undefined;
      if (hostMissing) {
        expect(quickstart.name).toBe("fake");
        expect(quickstart.reason).toMatch(hostMissing);
      } else {
        expect(quickstart.name).toBe("host");
        expect(quickstart.provider.capabilities).toMatchObject({ desktop: true, recordsRunTime: false });
        expect(quickstart.reason).toMatch(/this machine has the display stack, so a host computer/);
      }
      await expect(providerFromEnvironment({}, { dataDir: await dataDir() })).rejects.toMatchObject({
        code: "UNAVAILABLE",
        message: expect.stringContaining("SANDBOX_PROVIDER unset means Docker"),
      });
    } finally {
      if (previous === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = previous;
    }
  });

  it("unset, as a demo: Docker where an engine answers (fails under CI without one)", async () => {
    const host = await checkDockerHost();
    if (host.missing?.startsWith("no Docker engine")) {
      if (process.env.CI) throw new Error(`CI is set and ${host.missing}`);
      return;
    }
    const chosen = await providerFromEnvironment({}, { dataDir: await dataDir(), whenUnset: "docker-else-fake" });
    expect(chosen.name).toBe("docker");
    expect(chosen.provider.kind).toBe("docker");
    expect(chosen.reason).toMatch(/a Docker engine answers; computer image /);
  }, 900_000);
});
