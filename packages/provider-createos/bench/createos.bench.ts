// `npm run bench -- createos`: provider-createos, CreateOS (the official SDK
// against the emulator, whose VMs are containers of the same engine) beside
// provider-docker on that engine, in the same run (testing's
// provider-bench.ts: provision to first exec, an exec round trip, a desktop
// observe, export/import of a 200 MiB home). The ratio is the cost of the
// REST control plane, managed processes (a create, a stdin close and an
// NDJSON stream per command), the ingress path to the resident service, and
// the files API's whole-file transfers for homes, against the Engine API and
// a mounted home.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, runProviderBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { createosProvider } from "../src/index.js";
import { CreateosEmulator } from "../src/testing/index.js";

const API_KEY = "createos_bench_key";
const ROOTFS = "agent-computer-desktop";
// The baseline, and the engine whose containers back the emulator's VMs.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The createos bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-createos-bench-"));
const emulator = new CreateosEmulator({
  docker: host.docker as Docker,
  apiKey: API_KEY,
  rootfs: { [ROOTFS]: host.image as string },
});
await emulator.start();
try {
  await runProviderBench({
    ...benchOptionsFromArgv(),
    name: "provider-createos, CreateOS (emulator)",
    provider: createosProvider({ apiKey: API_KEY, baseUrl: emulator.baseUrl, rootfs: ROOTFS }, {}),
    docker: host.provider({ dataDir }),
    dockerDataDir: dataDir,
    transfer: { export: "files API (whole file)", import: "files API, running sandbox" },
  });
} finally {
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
