// AgentComputerError is recognised across the copies of its class a
// CommonJS app ends up with. Core's CJS build has no shared chunks, so each
// entry (index, provider-utils) carries its own class; a second installed
// copy of core (npm installs one per version a dependency pins) has another.
// `is()` and `instanceof` must hold across all of them (the Symbol.for brand
// in core's errors/agent-computer-error.ts).
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError, execRequestSchema, normalizeHomePath, parseInput } from "@agent-computer/core";
import { LocalHome } from "@agent-computer/core/provider-utils";
import { AgentComputerError as RuntimeError } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { AgentComputerError as CopyError, normalizeHomePath as copyNormalizeHomePath } from "agent-computer-core-copy";

async function thrown(what: () => unknown): Promise<unknown> {
  try {
    await what();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "consumer-errors-cjs-"));
  const provider = createFakeProvider({ root: join(dir, "machines") });
  const machine = await provider.provision({ computerId: "errors", homeKey: "errors" });
  const errors: Record<string, unknown> = {
    "core's index entry": await thrown(() => normalizeHomePath("../outside")),
    "core's index entry (parseInput)": await thrown(() =>
      parseInput(execRequestSchema, { shell: "true", timeoutMs: "soon" }, "ExecRequest"),
    ),
    "core's provider-utils entry": await thrown(() => new LocalHome(dir).resolve("../outside")),
    "a second installed copy of core": await thrown(() => copyNormalizeHomePath("../outside")),
    "testing's fake provider": await thrown(() => machine.files.read("../outside")),
  };
  const classes = {
    "core's index entry": AgentComputerError,
    "runtime's re-export": RuntimeError,
    "the second copy": CopyError,
  };

  // The copies really are distinct classes, or this test would prove nothing.
  const fromUtils = errors["core's provider-utils entry"] as Error;
  assert.notEqual(fromUtils.constructor, AgentComputerError, "provider-utils carries its own class in CJS");
  assert.notEqual(CopyError, AgentComputerError, "the second copy is another class");

  for (const [source, error] of Object.entries(errors)) {
    for (const [checker, Class] of Object.entries(classes)) {
      const where = `an error from ${source}, checked with ${checker}`;
      assert.equal(Class.is(error), true, `${where}: is()`);
      assert.equal(Class.is(error, "INVALID_ARGUMENT"), true, `${where}: is(e, code)`);
      assert.equal(Class.is(error, "NOT_FOUND"), false, `${where}: is(e, another code)`);
      assert.equal(error instanceof Class, true, `${where}: instanceof`);
    }
  }
  for (const Class of Object.values(classes)) {
    assert.equal(Class.is(new Error("plain")), false);
    assert.equal(Class.is({ name: "AgentComputerError", code: "INVALID_ARGUMENT" }), false, "a look-alike is not one");
  }
  await machine.destroy();
  await rm(dir, { recursive: true, force: true });
  console.log(
    `errors (CJS): ${Object.keys(errors).length} sources x ${Object.keys(classes).length} classes recognised each other`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
