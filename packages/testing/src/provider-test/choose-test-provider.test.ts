import type { SandboxProvider } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { createFakeProvider } from "../fake/fake-provider.js";
import { chooseTestProvider } from "./choose-test-provider.js";

interface EngineCheck {
  readonly engine: string;
  readonly missing?: string;
}

const made: object[] = [];
const candidate = (kind: string, missing?: string) => ({
  kind,
  check: async (): Promise<EngineCheck> => ({ engine: `${kind}-engine`, missing }),
  create: (options: { engine: string; dataDir: string; ports?: number[] }): SandboxProvider => {
    made.push(options);
    return createFakeProvider();
  },
});

describe("chooseTestProvider", () => {
  it("takes the first candidate whose check finds what it needs, and makes providers on its findings", async () => {
    const chosen = await chooseTestProvider([candidate("docker", "no engine"), candidate("other")]);
    expect(chosen).toMatchObject({ kind: "other", engine: "other-engine", missing: undefined });
    expect(chosen.provider({ dataDir: "/data", ports: [8080] }).kind).toBe("fake");
    expect(made.at(-1)).toEqual({ engine: "other-engine", dataDir: "/data", ports: [8080] });
  });

  it("says what every candidate misses when none can run, and makes no provider", async () => {
    const chosen = await chooseTestProvider([candidate("docker", "no engine"), candidate("other", "no image")]);
    expect(chosen).toMatchObject({
      kind: "docker",
      engine: "docker-engine",
      missing: "docker: no engine; other: no image",
    });
    expect(() => chosen.provider({ dataDir: "/data" })).toThrow(
      /No docker provider on this machine: docker: no engine/,
    );
    expect((await chooseTestProvider(candidate("docker", "no engine"))).missing).toBe("no engine");
  });
});
