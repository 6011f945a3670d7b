// `npm run bench -- fake`: what the fake provider's layers cost over doing the
// same thing with Node directly, on the same machine in the same run.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchOptionsFromArgv, runBench } from "../src/bench/run-bench.js";
import { createFakeProvider } from "../src/fake/fake-provider.js";

const machine = await createFakeProvider().provision({ computerId: "bench", homeKey: "bench" });
const scratch = await mkdtemp(join(tmpdir(), "fake-bench-"));
const payload = randomBytes(8 * 1024 * 1024);

function spawnTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", "true"], { stdio: "pipe" });
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

await runBench(
  "fake provider",
  [
    {
      name: "exec `true` round trip",
      unit: "ms",
      subject: { label: "machine.exec", run: () => machine.exec({ shell: "true" }) },
      baseline: { label: "child_process.spawn", run: spawnTrue },
    },
    {
      name: "write + read 8 MiB",
      unit: "MB/s",
      work: payload.length * 2,
      subject: {
        label: "machine.files",
        run: async () => {
          await machine.files.write("bench.bin", payload);
          await machine.files.read("bench.bin");
        },
      },
      baseline: {
        label: "fs/promises",
        run: async () => {
          await writeFile(join(scratch, "bench.bin"), payload);
          await readFile(join(scratch, "bench.bin"));
        },
      },
    },
  ],
  { runs: 15, warmup: 3, ...benchOptionsFromArgv() },
);
await machine.destroy();
