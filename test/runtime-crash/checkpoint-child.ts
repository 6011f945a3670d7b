// Child process of the runtime crash test: one run of bot "alpha" writes a
// generation of its files, then ends, which checkpoints the home. The parent
// kills this process (SIGKILL) at a random moment of that checkpoint.

import { type HomeCheckpointRequest, LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { createComputerRuntime } from "@agent-computer/runtime";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { createFakeProvider } from "@agent-computer/testing";
import { generationBytes } from "./generation.js";

const [root, dataDir, stateFile, generationText, mode] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string?,
];
const generation = Number(generationText);

/** With mode "after-commit" the process kills itself the moment the record has the revision, before the swap. */
class DyingAfterCommit extends LocalAgentHomeStore {
  override checkpoint(request: HomeCheckpointRequest) {
    const commit = request.commit;
    return super.checkpoint({
      ...request,
      commit: async (next) => {
        await commit?.(next);
        process.kill(process.pid, "SIGKILL");
      },
    });
  }
}
const runtime = createComputerRuntime({
  provider: createFakeProvider({ root }),
  stateStore: SqliteStateStore.open({ path: stateFile }),
  homeStore: mode === "after-commit" ? new DyingAfterCommit({ dataDir }) : new LocalAgentHomeStore({ dataDir }),
  leaseTtlMs: 1000,
  idleMs: 0,
  onEvent: (event) => process.stdout.write(`event ${event.type}\n`),
});
const run = runtime.startRun({ workspaceId: "crash", botId: "alpha" });
const machine = await run.machine();
await machine.files.write("bots/alpha/data.bin", generationBytes(generation));
await machine.files.write("bots/alpha/generation.txt", new TextEncoder().encode(String(generation)));
process.stdout.write("written\n");
await run.end("completed");
process.stdout.write("saved\n");
process.exit(0);
