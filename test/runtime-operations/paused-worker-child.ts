// Child process of the paused-worker test: a runtime whose worker takes an
// update of the given computer. Its provider's provisioning call hangs
// until the parent creates the answer file, as an engine call stuck behind
// a network partition would; the parent has this process paused (SIGUSR2:
// it stops itself with SIGSTOP) meanwhile, lets ten minutes pass on the
// store's clock, resumes it (SIGCONT), and then lets the call answer.

import { existsSync } from "node:fs";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import type { StateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider, withProvision } from "@agent-computer/testing";
import { openPausedWorkerStore, type PausedWorkerStore } from "./paused-worker-store.js";

interface ChildConfig extends PausedWorkerStore {
  readonly root: string;
  readonly dataDir: string;
  readonly answerFile: string;
  readonly computerId: string;
  readonly deployment: string;
}

const config = JSON.parse(process.argv[2] as string) as ChildConfig;
const fake = createFakeProvider({ root: config.root });
const provider = withProvision(fake, (_spec, _ctx, next) => {
  process.stdout.write("provisioning\n");
  return new Promise<Machine>((resolve, reject) => {
    const poll = setInterval(() => {
      if (!existsSync(config.answerFile)) return;
      clearInterval(poll);
      next().then(resolve, reject);
    }, 20);
  });
});
const { store: shared } = await openPausedWorkerStore(config);

// SIGUSR2 pauses this process (SIGSTOP, by itself) at a moment when none of
// its store calls is in flight: paused inside a PostgreSQL transaction, it
// would hold row locks the parent's reads then wait on until it resumed.
let inFlight = 0;
let pausing: (() => void) | undefined;
let gate: Promise<void> | undefined;
const pauseIfQuiet = () => {
  if (!pausing || inFlight > 0) return;
  const resume = pausing;
  pausing = undefined;
  process.stdout.write("paused\n");
  process.kill(process.pid, "SIGSTOP");
  // Here again after SIGCONT.
  gate = undefined;
  resume();
};
process.on("SIGUSR2", () => {
  gate = new Promise((resolve) => {
    pausing = resolve;
  });
  pauseIfQuiet();
});
const tracked = async <T>(call: () => Promise<T>): Promise<T> => {
  while (gate) await gate;
  inFlight++;
  try {
    return await call();
  } finally {
    inFlight--;
    pauseIfQuiet();
  }
};
const store: StateStore = {
  read: (keys) => tracked(() => shared.read(keys)),
  commit: (expect, write) => tracked(() => shared.commit(expect, write)),
  now: () => tracked(() => shared.now()),
};
const runtime = createComputerRuntime({
  provider,
  stateStore: store,
  homeStore: new LocalAgentHomeStore({ dataDir: config.dataDir }),
  idleMs: 0,
  deployment: config.deployment,
  operations: { heartbeatMs: 100, workerId: "paused-worker" },
});
const operation = await runtime.operations.requestUpdate({ computerId: config.computerId, owner: "owner-1" });
process.stdout.write(`operation ${operation.id}\n`);
// A worker process lives until it is stopped; the runtime's own timers do not keep it up.
setInterval(() => {}, 60_000);
