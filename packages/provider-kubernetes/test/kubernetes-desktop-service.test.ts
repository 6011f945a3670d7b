import type { Machine } from "@agent-computer/core";
import { type LinuxDesktopSession, SERVICE_HAND_OVER_COMMAND } from "@agent-computer/desktop-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubernetesTestEnvironment } from "./kubernetes-test-environment.js";

// The resident desktop service on Kubernetes (docs/architecture.md §4): the
// shared driver reaches it through the pod's port URL, so after the one
// exec that starts it and hands the key over, desktop calls use no exec.
const env = await kubernetesTestEnvironment("kubernetes desktop service");
if (!env.missing) {
  describe("kubernetes desktop service", () => {
    const provider = env.provider({ seccompLocalhostProfile: "agent-computer/chromium.json" });
    let machine: Machine;
    const execs: string[] = [];

    beforeAll(async () => {
      machine = await provider.provision({ computerId: "service", homeKey: `service-${Date.now()}` });
      const realExec = machine.exec.bind(machine);
      machine.exec = (request, ctx) => {
        execs.push((request.argv ?? []).slice(0, 3).join(" "));
        return realExec(request, ctx);
      };
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("starts the service with one exec, then observes, acts and grants over its connection", async () => {
      const desktop = (await machine.openDesktop?.("pod-bot")) as LinuxDesktopSession;
      // The hand-over runs the image's execute-only node on the bundle (desktop-channel.ts).
      expect(execs).toEqual([[...SERVICE_HAND_OVER_COMMAND, "service"].join(" ")]);
      expect((await desktop.act([{ type: "move", x: 21, y: 22 }])).ok).toBe(true);
      expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 21, y: 22 });
      const look = await desktop.observe(undefined, { format: "webp", maxWidth: 320 });
      expect(look.mimeType).toBe("image/webp");
      const endpoint = await desktop.screenEndpoint("view");
      expect(endpoint.url).toMatch(/^ws:\/\/.+:6080\/screens\//);
      await desktop.release();
      expect(execs).toEqual([[...SERVICE_HAND_OVER_COMMAND, "service"].join(" ")]);
    }, 90_000);
  });
}
