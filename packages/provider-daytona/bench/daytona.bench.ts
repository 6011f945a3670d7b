// `npm run bench -- daytona`: provider-daytona (the real @daytonaio/sdk
// against the emulator, whose sandboxes are containers of the same engine)
// beside provider-docker on that engine, in the same run (testing's
// provider-bench.ts: provision to first exec, an exec round trip, a desktop
// observe, export/import of a 200 MiB home). The ratio is the cost of the
// REST control plane, the toolbox's sessions API (a session, an async
// exec, a log websocket per command, base64-framed output) and the
// toolbox's multipart bulk download and upload for homes, against the
// Engine API and a mounted home.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, runProviderBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { daytonaProvider } from "../src/index.js";
import { DaytonaEmulator } from "../src/testing/index.js";

const API_KEY = "dtn_bench_key";
// The baseline, and the engine whose containers back the emulator's sandboxes.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The daytona bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-daytona-bench-"));
const emulator = new DaytonaEmulator({ docker: host.docker as Docker, apiKey: API_KEY });
await emulator.start();
try {
  await runProviderBench({
    ...benchOptionsFromArgv(),
    name: "provider-daytona (emulator)",
    provider: daytonaProvider({
      apiKey: API_KEY,
      apiUrl: emulator.apiUrl,
      snapshot: host.image,
      stateUpdates: "polling",
      // Signed previews are in host form: the emulator's tunnel carries the host (observe goes through one).
      previewUrl: (preview) => emulator.previewTunnel(preview.url),
    }),
    docker: host.provider({ dataDir }),
    dockerDataDir: dataDir,
    transfer: { export: "bulk download", import: "bulk upload, running sandbox" },
  });
} finally {
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
