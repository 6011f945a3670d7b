import { AgentComputerError, type Machine } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { templateNameOf } from "../src/named-template.js";
import { createosTestEnvironment, TEST_ROOTFS } from "./createos-test-environment.js";

// Without a named rootfs, the provider boots from a template built from its
// recipe: found by name, or built once when missing (templates.create, then
// pending → building → ready) and shared by concurrent provisions; a failed
// build is an error naming what to do, never a computer without its tools.
const env = await createosTestEnvironment("createos: the computer's template");
if (!env.missing) {
  const owned: Machine[] = [];
  const recipe = { dockerfile: `FROM ${TEST_ROOTFS}\nRUN true\n` };

  describe("createos: the computer's template", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("builds the template once when missing, and boots every computer from it", async () => {
      const provider = env.provider({ rootfs: undefined, template: recipe });
      const [a, b] = await Promise.all([
        provider.provision({ computerId: "tpl-a", homeKey: `tpl-a-${Date.now()}` }),
        provider.provision({ computerId: "tpl-b", homeKey: `tpl-b-${Date.now()}` }),
      ]);
      owned.push(a, b);
      expect(env.emulator.templates.created).toEqual([templateNameOf(recipe)]);
      expect((await a.exec({ argv: ["true"] })).exitCode).toBe(0);
      // Another provider (a restart) finds the ready template: no second build.
      const later = env.provider({ rootfs: undefined, template: recipe });
      owned.push(await later.provision({ computerId: "tpl-c", homeKey: `tpl-c-${Date.now()}` }));
      expect(env.emulator.templates.created).toEqual([templateNameOf(recipe)]);
    }, 120_000);

    it("a failed build is UNAVAILABLE, saying how to go on", async () => {
      const provider = env.provider({ rootfs: undefined, template: { dockerfile: "FROM elsewhere\n" } });
      const error = await failureOf(provider.provision({ computerId: "tpl-x", homeKey: `tpl-x-${Date.now()}` }));
      expect(AgentComputerError.is(error, "UNAVAILABLE")).toBe(true);
      expect(error.message).toMatch(/failed to build/);
    }, 60_000);
  });
}
