import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { EgressDenial, Logger } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider, egressProxyName } from "@agent-computer/provider-docker";
import { type ComputerEvent, createComputerRuntime } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Issue 53: "A denied request is visible: the bot's program gets a clear
// error (an HTTP 403 from the proxy naming the policy), and the app an
// activity event." On the default Docker computer with a policy, a bot's
// refused request reaches the runtime's listeners as an `egress-denied`
// event of its computer (SandboxProvider.watchEgressDenials), beside the
// app's own `onEgressDenied`; what the request carried (its path, its
// headers) is in neither, nor in the runtime's log.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "the runtime's egress-denied events on Docker",
);

const SECRET_IN_REQUEST = "sk-live-do-not-log-0f3a";

if (!env.missing) {
  describe("the runtime's egress-denied events on Docker", async () => {
    const dataDir = await temporaryDataDir();
    const events: ComputerEvent[] = [];
    const appDenials: EgressDenial[] = [];
    const logLines: string[] = [];
    const logger: Logger = {
      debug: (message, fields) => logLines.push(`${message} ${JSON.stringify(fields ?? {})}`),
      info: (message, fields) => logLines.push(`${message} ${JSON.stringify(fields ?? {})}`),
      warn: (message, fields) => logLines.push(`${message} ${JSON.stringify(fields ?? {})}`),
      error: (message, fields) => logLines.push(`${message} ${JSON.stringify(fields ?? {})}`),
    };
    const provider = env.provider({ dataDir, onEgressDenied: (denial) => appDenials.push(denial) });
    const runtime = createComputerRuntime({
      provider,
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir }),
      spec: { egress: { name: "bots-fence", allow: ["allowed.example.test"] } },
      onEvent: (event) => events.push(event),
      logger,
    });
    const workspaceId = `egress-events-${Date.now().toString(36)}`;
    const run = runtime.startRun({ workspaceId, botId: "alpha" });
    const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });

    afterAll(async () => {
      await run.end("completed").catch(() => {});
      await runtime.deleteComputer(computerId).catch(() => {});
      await env.docker
        ?.getContainer(egressProxyName(dataDir))
        .remove({ force: true })
        .catch(() => {});
    }, 120_000);

    it("gives the bot the policy's 403 and the app an egress-denied event of its computer, without what the request carried", async () => {
      const machine = await run.machine();
      const result = await machine.exec({
        argv: [
          "curl",
          "-sS",
          "--max-time",
          "10",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "-H",
          `Authorization: Bearer ${SECRET_IN_REQUEST}`,
          `http://refused.example.test:8081/reports?token=${SECRET_IN_REQUEST}`,
        ],
      });
      expect(Buffer.from(result.stdout).toString()).toBe("403");
      await expect
        .poll(() => events.filter((event) => event.type === "egress-denied"), { timeout: 15_000 })
        .toContainEqual(
          expect.objectContaining({
            type: "egress-denied",
            computerId,
            detail: { policy: "bots-fence", host: "refused.example.test", port: 8081, reason: "not-allowed" },
          }),
        );
      // The app's own option still hears it: one fan-out, two listeners.
      expect(appDenials).toContainEqual(
        expect.objectContaining({ computerId, host: "refused.example.test", reason: "not-allowed" }),
      );
      const seen = JSON.stringify({ events, appDenials, logLines });
      expect(seen).not.toContain(SECRET_IN_REQUEST);
      expect(seen).not.toContain("/reports");
      expect(logLines.some((line) => line.startsWith("computer egress-denied"))).toBe(true);
    }, 240_000);

    it("reports the metadata address too, and stops reporting to a listener that unsubscribed", async () => {
      const machine = await run.machine();
      const heard: EgressDenial[] = [];
      const unsubscribe = provider.watchEgressDenials?.((denial) => heard.push(denial));
      expect(unsubscribe).toBeTypeOf("function");
      await machine.exec({ argv: ["curl", "-sS", "--max-time", "10", "http://169.254.169.254/latest/meta-data/"] });
      await expect
        .poll(
          () => events.filter((event) => event.type === "egress-denied" && event.detail.host === "169.254.169.254"),
          {
            timeout: 15_000,
          },
        )
        .toHaveLength(1);
      // Not on the allowlist is the first rule it fails (a policy without `allow` says metadata-address).
      expect(heard).toContainEqual(
        expect.objectContaining({ computerId, host: "169.254.169.254", reason: "not-allowed" }),
      );
      unsubscribe?.();
      const before = heard.length;
      await machine.exec({ argv: ["curl", "-sS", "--max-time", "10", "http://second.refused.example.test/"] });
      await expect
        .poll(() => events.filter((event) => event.detail.host === "second.refused.example.test"), { timeout: 15_000 })
        .toHaveLength(1);
      expect(heard).toHaveLength(before);
    }, 120_000);
  });
}
