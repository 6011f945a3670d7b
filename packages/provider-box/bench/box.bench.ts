// `npm run bench -- box`: provider-box, Boat (its client against the emulator,
// whose sandboxes are containers of the same engine) beside provider-docker on
// that engine, in the same run (testing's provider-bench.ts: provision to
// first exec, an exec round trip, a desktop observe, export/import of a
// 200 MiB home). The ratio is the cost of the REST control plane, detached
// commands with polled base64 output (a start and at least one poll per
// command), the private route to the resident service, and the files API's
// base64 parts for homes, against the Engine API and a mounted home.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, runProviderBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { boatProvider } from "../src/index.js";
import { BoatEmulator } from "../src/testing/index.js";

const API_KEY = "boat_bench_key";
// The baseline, and the engine whose containers back the emulator's boxes.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The box bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-box-bench-"));
const emulator = new BoatEmulator({ docker: host.docker as Docker, apiKey: API_KEY, baseImage: host.image as string });
await emulator.start();
try {
  await runProviderBench({
    ...benchOptionsFromArgv(),
    name: "provider-box, Boat (emulator)",
    provider: boatProvider({ apiKey: API_KEY, baseUrl: emulator.baseUrl }, {}),
    docker: host.provider({ dataDir }),
    dockerDataDir: dataDir,
    transfer: { export: "files API", import: "files API, running sandbox" },
  });
} finally {
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
