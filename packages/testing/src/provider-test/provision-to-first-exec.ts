import type { Machine, SandboxProvider } from "@agent-computer/core";

/**
 * A bench run: provisions a machine on a fresh home and runs `true` in it,
 * the time until a new computer answers. Each machine is pushed onto
 * `machines` for the bench to destroy at its end. Two of these in one bench
 * take different `name`s, so their computers and homes never meet.
 */
export function provisionToFirstExec(
  provider: SandboxProvider,
  machines: Machine[],
  name = "bench-fresh",
): () => Promise<void> {
  let fresh = 0;
  return async () => {
    const machine = await provider.provision({ computerId: name, homeKey: `${name}-${fresh++}` });
    machines.push(machine);
    await machine.exec({ argv: ["true"] });
  };
}
