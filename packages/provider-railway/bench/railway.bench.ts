// `npm run bench -- railway`: provider-railway (its client against the
// emulator, whose deployments are containers of the same engine with a
// Docker volume) beside provider-docker on that engine, in the same run
// (testing's provider-bench.ts: provision to first exec, an exec round
// trip, a desktop observe, export/import of a 200 MiB home). The ratio is
// the cost of the GraphQL control plane (a service, a volume, a deploy),
// a shell token and a WebSocket per command, the public domain to the
// resident service, and homes through `cat` over the bridge, against the
// Engine API and a mounted home.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, runProviderBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { railwayProvider } from "../src/index.js";
import { RailwayEmulator } from "../src/testing/index.js";

const TOKEN = "railway_bench_token";
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The railway bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-railway-bench-"));
const emulator = new RailwayEmulator({ docker: host.docker as Docker, token: TOKEN });
await emulator.start();
try {
  await runProviderBench({
    ...benchOptionsFromArgv(),
    name: "provider-railway, Railway (emulator)",
    provider: railwayProvider(
      {
        token: TOKEN,
        projectId: emulator.projectId,
        environmentId: emulator.environmentId,
        endpoint: emulator.endpoint,
        execUrl: emulator.execUrl,
        image: host.image as string,
        domainUrl: (domain) => emulator.urlOfDomain(domain),
        pollMs: 200,
      },
      {},
    ),
    docker: host.provider({ dataDir }),
    dockerDataDir: dataDir,
    transfer: { export: "cat over the exec bridge", import: "cat over the exec bridge, running service" },
  });
} finally {
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
