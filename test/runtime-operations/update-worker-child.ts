// Child process of the worker-crash test: a runtime whose worker takes an
// update of the given computer. Its provider hangs when the update asks for
// the new machine, as a stuck engine call would; the parent kills this
// process (SIGKILL) while it hangs there, heartbeating.

import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { createComputerRuntime } from "@agent-computer/runtime";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { createFakeProvider, withProvision } from "@agent-computer/testing";

const [root, dataDir, stateFile, computerId] = process.argv.slice(2) as [string, string, string, string];
const fake = createFakeProvider({ root });
// Provisioning never answers: the parent kills this worker mid-operation.
const provider = withProvision(fake, () => {
  process.stdout.write("provisioning\n");
  return new Promise(() => {});
});
const runtime = createComputerRuntime({
  provider,
  stateStore: SqliteStateStore.open({ path: stateFile }),
  homeStore: new LocalAgentHomeStore({ dataDir }),
  idleMs: 0,
  deployment: "worker-crash",
  operations: { heartbeatMs: 100, workerId: "child-worker" },
});
const operation = await runtime.operations.requestUpdate({ computerId, owner: "owner-1" });
process.stdout.write(`operation ${operation.id}\n`);
// A worker process lives until it is stopped; the runtime's own timers do not keep it up.
setInterval(() => {}, 60_000);
