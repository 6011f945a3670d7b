import { type Machine, opContext } from "@agent-computer/core";
import { HttpResponse, http, passthrough } from "msw";
import { setupServer } from "msw/node";
import { afterAll, describe, expect, it } from "vitest";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// msw here, and only here, because the fault depends on the sandbox's state:
// every read of the sandbox answers 502 for exactly as long as the emulator
// says it is starting (Daytona #4142), which counted faults cannot time.
// The SDK's axios goes through node:http, so msw sees its calls; everything
// else passes through to the real emulator.

const env = await daytonaTestEnvironment("daytona: 502 during a state change (msw)");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine | undefined;
  let answered502 = 0;
  const server = setupServer(
    http.get(`${env.emulator.apiUrl}/sandbox/:id`, ({ params }) => {
      if (env.emulator.stateOf(String(params.id)) !== "starting") return passthrough();
      answered502++;
      return HttpResponse.json({ statusCode: 502, message: "Bad Gateway" }, { status: 502 });
    }),
    // The SDK's other calls and the emulator's own Docker calls go on as they are.
    http.all("*", () => passthrough()),
  );

  describe("daytona: 502 during a state change (msw)", () => {
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    }, 60_000);

    it("reconnect through 502 answers while the sandbox starts", async () => {
      machine = await provider.provision({ computerId: "msw", homeKey: `msw-${Date.now()}` });
      await machine.stop();
      env.emulator.startDelayMs = 2_000;
      server.listen();
      const again = await provider
        .reconnect(machine.ref, opContext({ timeoutMs: 60_000 }))
        .finally(() => server.close());
      expect(again).not.toBe("gone");
      expect(answered502).toBeGreaterThan(2);
      expect(env.emulator.stateOf(machine.ref.slice("daytona:".length))).toBe("started");
      expect(Buffer.from((await (again as Machine).exec({ argv: ["echo", "up"] })).stdout).toString()).toBe("up\n");
    }, 90_000);
  });
}
