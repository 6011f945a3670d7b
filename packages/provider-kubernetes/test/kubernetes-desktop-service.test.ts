import type { Machine } from "@agent-computer/core";
import { type LinuxDesktopSession, SERVICE_HAND_OVER_COMMAND } from "@agent-computer/desktop-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISPLAY_CONTAINER_NAME } from "../src/display-container-manifest.js";
import { kubernetesTestEnvironment } from "./kubernetes-test-environment.js";

// The resident desktop service on Kubernetes (docs/architecture.md §4): the
// shared driver reaches it through the pod's port URL, so after the one
// exec that starts it and hands the key over, desktop calls use no exec.
// Desktop calls run in the pod's display container (displayContainer, the
// default): the fixture counts the execs that reach it.
const env = await kubernetesTestEnvironment("kubernetes desktop service");
if (!env.missing) {
  describe("kubernetes desktop service", () => {
    const provider = env.provider({ seccompLocalhostProfile: "agent-computer/chromium.json" });
    let machine: Machine;
    /** The commands exec'd into one container of the pod, each whole (the provider wraps argv in a shell). */
    const execsIn = (container: string) =>
      env.fixture.execsStarted
        .filter((e) => e.pod === machine.ref.split("/")[1] && e.container === container)
        .map((e) => e.command.join(" "));
    const handOver = [...SERVICE_HAND_OVER_COMMAND, "service"].join(" ");

    beforeAll(async () => {
      machine = await provider.provision({ computerId: "service", homeKey: `service-${Date.now()}` });
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("starts the service with one exec, then observes, acts and grants over its connection", async () => {
      const desktop = (await machine.openDesktop?.("pod-bot")) as LinuxDesktopSession;
      // The hand-over runs the image's execute-only node on the bundle (desktop-channel.ts).
      expect(execsIn(DISPLAY_CONTAINER_NAME)).toEqual([expect.stringContaining(handOver)]);
      expect((await desktop.act([{ type: "move", x: 21, y: 22 }])).ok).toBe(true);
      expect((await desktop.observe(undefined, { includeImage: false })).cursor).toEqual({ x: 21, y: 22 });
      const look = await desktop.observe(undefined, { format: "webp", maxWidth: 320 });
      expect(look.mimeType).toBe("image/webp");
      const endpoint = await desktop.screenEndpoint("view");
      expect(endpoint.url).toMatch(/^ws:\/\/.+:6080\/screens\//);
      await desktop.release();
      expect(execsIn(DISPLAY_CONTAINER_NAME)).toEqual([expect.stringContaining(handOver)]);
      // None of it ran in the bot's container (`true` is the provider's probe of the exec protocol).
      expect(execsIn("computer").filter((command) => command !== "true")).toEqual([]);
    }, 90_000);
  });
}
