// `npm run bench -- boxd`: provider-boxd, boxd (the package's gRPC client
// against the emulator, whose machines are containers of the same engine)
// beside provider-docker on that engine, in the same run (testing's
// provider-bench.ts: provision to first exec, an exec round trip, a desktop
// observe, export/import of a 200 MiB home). The ratio is the cost of the
// gRPC control plane (a key exchange, CreateVm, GetVm until running, both
// idle timers), one bidirectional Exec stream per command, the public URL's
// path to the resident desktop service, and the home moved as one tar
// through Exec's stdout and stdin, against the Engine API and a mounted home.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, runProviderBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { boxdProvider } from "../src/index.js";
import { BoxdEmulator } from "../src/testing/index.js";

const API_KEY = "bxd_bench_key";
// The baseline, and the engine whose containers back the emulator's machines.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The boxd bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-boxd-bench-"));
const emulator = new BoxdEmulator({
  docker: host.docker as Docker,
  baseImage: host.image as string,
  apiKeys: { [API_KEY]: "org-bench" },
});
await emulator.start();
try {
  await runProviderBench({
    ...benchOptionsFromArgv(),
    name: "provider-boxd, boxd (emulator)",
    provider: boxdProvider(
      {
        apiKey: API_KEY,
        apiUrl: emulator.apiUrl,
        tokenUrl: emulator.tokenUrl,
        publicUrl: (name) => emulator.publicUrlOf(name),
      },
      {},
    ),
    docker: host.provider({ dataDir }),
    dockerDataDir: dataDir,
    transfer: { export: "Exec stdout (cat)", import: "Exec stdin (cat), running machine" },
  });
} finally {
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
