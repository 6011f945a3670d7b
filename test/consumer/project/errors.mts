// The same across module systems: an ESM app whose dependencies load core's
// CJS build (or the other way round) holds two classes; each recognises the
// other's errors, and the ESM entries agree among themselves.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError, normalizeHomePath } from "@agent-computer/core";
import { LocalHome } from "@agent-computer/core/provider-utils";
import { createFakeProvider } from "@agent-computer/testing";
import { AgentComputerError as CopyError } from "agent-computer-core-copy";

const require = createRequire(import.meta.url);
const cjs = require("@agent-computer/core") as typeof import("@agent-computer/core");
const cjsTesting = require("@agent-computer/testing") as typeof import("@agent-computer/testing");

async function thrown(what: () => unknown): Promise<unknown> {
  try {
    await what();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

const dir = await mkdtemp(join(tmpdir(), "consumer-errors-esm-"));
const esmMachine = await createFakeProvider({ root: join(dir, "esm") }).provision({ computerId: "e", homeKey: "e" });
const cjsMachine = await cjsTesting
  .createFakeProvider({ root: join(dir, "cjs") })
  .provision({ computerId: "c", homeKey: "c" });
const errors: Record<string, unknown> = {
  "core's ESM index": await thrown(() => normalizeHomePath("../outside")),
  "core's ESM provider-utils": await thrown(() => new LocalHome(dir).resolve("../outside")),
  "core's CJS index": await thrown(() => cjs.normalizeHomePath("../outside")),
  "testing's ESM fake provider": await thrown(() => esmMachine.files.read("../outside")),
  "testing's CJS fake provider": await thrown(() => cjsMachine.files.read("../outside")),
};
assert.notEqual(cjs.AgentComputerError, AgentComputerError, "the CJS build is another class");
const classes = {
  "core's ESM build": AgentComputerError,
  "core's CJS build": cjs.AgentComputerError,
  "the second copy": CopyError,
};
for (const [source, error] of Object.entries(errors)) {
  for (const [checker, Class] of Object.entries(classes)) {
    const where = `an error from ${source}, checked with ${checker}`;
    assert.equal(Class.is(error, "INVALID_ARGUMENT"), true, `${where}: is(e, code)`);
    assert.equal(error instanceof Class, true, `${where}: instanceof`);
  }
}
await esmMachine.destroy();
await cjsMachine.destroy();
await rm(dir, { recursive: true, force: true });
console.log(
  `errors (ESM): ${Object.keys(errors).length} sources x ${Object.keys(classes).length} classes recognised each other`,
);
