import { createHash, randomBytes } from "node:crypto";
import { AgentComputerError, type Machine } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { railwayTestEnvironment } from "./railway-test-environment.js";

// exec over Railway's exec bridge: stdin in 0x02 frames and its close,
// stdout and stderr apart and byte-exact, exit codes as results; a
// command on a stopped computer deploys it again; a stop during a command
// ends it and its cleanup deploys nothing.
const env = await railwayTestEnvironment("railway: exec over the bridge");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  let machine: Machine;
  const idOf = (m: Machine) => m.ref.slice("railway:".length);
  const deploymentsOf = (m: Machine) => env.emulator.services.get(idOf(m))?.deployments.length ?? 0;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  describe("railway: exec over the bridge", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("sends a large stdin, keeps stdout and stderr apart byte for byte, and gives exit codes", async () => {
      machine = await provider.provision({ computerId: "exec", homeKey: `exec-${Date.now()}` });
      owned.push(machine);
      const input = randomBytes(9 * 1024 * 1024 + 17);
      const hashed = await machine.exec({ argv: ["sha256sum"], stdin: input });
      expect(new TextDecoder().decode(hashed.stdout).split(" ")[0]).toBe(
        createHash("sha256").update(input).digest("hex"),
      );
      const both = await machine.exec({ shell: "printf '\\001\\377out'; printf 'err' >&2; exit 3" });
      expect(both.exitCode).toBe(3);
      expect(Buffer.from(both.stdout)).toEqual(Buffer.from([1, 255, ...Buffer.from("out")]));
      expect(new TextDecoder().decode(both.stderr)).toBe("err");
      expect((await machine.exec({ argv: ["no-such-program"] })).exitCode).toBe(127);
      // Every command runs as the computer's user, in the home on the volume.
      const who = await machine.exec({ shell: 'id -u; pwd; echo "$HOME"' });
      expect(new TextDecoder().decode(who.stdout)).toBe("1000\n/data/home\n/data/home\n");
    }, 120_000);

    it("a stop during a command ends it UNAVAILABLE and its cleanup deploys nothing; the next command deploys again", async () => {
      let began = () => {};
      const running = new Promise<void>((resolve) => {
        began = resolve;
      });
      const ran = failureOf(machine.exec({ shell: "echo started; sleep 60", onOutput: () => began() }));
      await running;
      const deployments = deploymentsOf(machine);
      await machine.stop();
      const failure = await ran;
      expect(failure).toMatchObject({ name: "AgentComputerError", code: "UNAVAILABLE" });
      expect(String((failure as Error).message)).toMatch(/stopped while the command ran/);
      await sleep(2_000);
      expect(env.emulator.containerOf(idOf(machine))).toBeUndefined();
      expect(deploymentsOf(machine)).toBe(deployments);
      // New work deploys it again, on the same volume.
      expect(new TextDecoder().decode((await machine.exec({ argv: ["echo", "woken"] })).stdout)).toBe("woken\n");
      expect(deploymentsOf(machine)).toBe(deployments + 1);
    }, 120_000);

    it("a deleted service is gone for every call, and the handle's own destroy spends it", async () => {
      const doomed = await provider.provision({ computerId: "doomed", homeKey: `doomed-${Date.now()}` });
      await doomed.destroy();
      expect(AgentComputerError.is(await failureOf(doomed.exec({ argv: ["true"] })), "PROVIDER_GONE")).toBe(true);
      expect(await provider.reconnect(doomed.ref)).toBe("gone");
    }, 120_000);
  });
}
