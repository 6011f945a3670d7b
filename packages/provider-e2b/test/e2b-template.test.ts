import { failureOf } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";
import { buildE2bTemplate, type E2bTemplateStage, novitaProvider } from "../src/index.js";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// The template command's requests, through the real SDK's template build
// against the emulator: the computer image at 2 vCPU and 4 GB, with staged
// progress; the built template then starts computers.
const env = await e2bTestEnvironment("e2b: the template command");
if (!env.missing) {
  const { emulator } = env;
  describe("e2b: the template command", () => {
    it("builds the computer template from the computer image at 2 vCPU and 4 GB, in stages", async () => {
      const stages: E2bTemplateStage[] = [];
      const name = `computer-${Date.now()}`;
      const built = await buildE2bTemplate({
        apiKey: env.apiKey,
        apiUrl: emulator.apiUrl,
        name,
        image: env.image,
        onProgress: (stage) => stages.push(stage),
      });
      expect(built.name).toBe(name);
      const build = [...emulator.templateBuilds.values()].find((b) => b.templateId === built.templateId);
      expect(build).toMatchObject({ name, cpuCount: 2, memoryMB: 4096, fromImage: env.image, status: "ready" });
      expect(stages[0]).toBe("requesting");
      expect(stages).toContain("building");
      expect(stages.at(-1)).toBe("ready");
      const paths = emulator.calls.map((c) => `${c.method} ${c.path}`);
      expect(paths).toContain("POST /v3/templates");
      expect(paths).toContain(`POST /v2/templates/${built.templateId}/builds/${build?.buildId}`);
      // The new template starts computers.
      const provider = env.provider({ template: name });
      const machine = await provider.provision({ computerId: "from-template", homeKey: `from-template-${Date.now()}` });
      try {
        expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
      } finally {
        await machine.destroy();
      }
    }, 60_000);

    it("builds Novita's template through novita-sandbox's own builder, and Novita computers start from it", async () => {
      const name = `novita-computer-${Date.now()}`;
      const before = emulator.calls.length;
      const built = await buildE2bTemplate({
        service: "novita",
        apiKey: env.apiKey,
        apiUrl: emulator.apiUrl,
        name,
        image: env.image,
      });
      const build = [...emulator.templateBuilds.values()].find((b) => b.templateId === built.templateId);
      expect(build).toMatchObject({ name, cpuCount: 2, memoryMB: 4096, fromImage: env.image, status: "ready" });
      const paths = emulator.calls.slice(before).map((c) => `${c.method} ${c.path}`);
      expect(paths).toContain("POST /v3/templates");
      const provider = novitaProvider(
        {
          apiKey: env.apiKey,
          template: name,
          apiUrl: emulator.apiUrl,
          sandboxUrl: emulator.sandboxUrl,
          portUrl: (id, port) => emulator.portUrl(id, port),
        },
        {},
      );
      const machine = await provider.provision({
        computerId: "novita-template",
        homeKey: `novita-template-${Date.now()}`,
      });
      try {
        expect(machine.ref).toMatch(/^novita:/);
        expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
      } finally {
        await machine.destroy();
      }
    }, 60_000);

    it("refuses a Novita template build on a legacy domain as UNSUPPORTED, before any request", async () => {
      const before = emulator.calls.length;
      const error = await failureOf(
        buildE2bTemplate({ service: "novita", apiKey: env.apiKey, domain: "sandbox.novita.ai", image: env.image }),
      );
      expect(error.code).toBe("UNSUPPORTED");
      expect(error.message).toContain("legacy");
      expect(emulator.calls.length).toBe(before);
    });

    it("surfaces a refused key as UNAVAILABLE without the key in the message", async () => {
      const error = await failureOf(
        buildE2bTemplate({ apiKey: "e2b_wrong-key-123", apiUrl: emulator.apiUrl, image: env.image }),
      );
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.message).not.toContain("e2b_wrong-key-123");
    });
  });
}
