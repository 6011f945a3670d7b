// `npm run bench -- e2b`: provider-e2b (through the real e2b SDK and the
// loopback emulator, whose sandboxes are containers of the same engine)
// beside provider-docker on that engine, in the same run (testing's
// provider-bench.ts: provision to first exec, exec round trip, observe,
// export and import of a 200 MiB home of mixed files); and a file written
// through the provider beside the SDK's own `files.write` of the same
// bytes (docs/architecture.md §12).
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, runProviderBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { type E2bMachine, e2bProvider } from "../src/index.js";
import { E2bEmulator } from "../src/testing/index.js";

const FILE_BYTES = 32 * 1024 * 1024;
const TEMPLATE = "agent-computer-bench";
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The e2b bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-e2b-bench-"));
const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
const emulator = await new E2bEmulator({ docker: host.docker, templates: { [TEMPLATE]: host.image }, apiKey }).start();
const e2b = e2bProvider(
  {
    apiKey,
    template: TEMPLATE,
    apiUrl: emulator.apiUrl,
    sandboxUrl: emulator.sandboxUrl,
    portUrl: (id, port) => emulator.portUrl(id, port),
  },
  {},
);
try {
  await runProviderBench({
    ...benchOptionsFromArgv(),
    name: "provider-e2b (emulator)",
    provider: e2b,
    docker: host.provider({ dataDir }),
    dockerDataDir: dataDir,
    transfer: { export: "envd /files", import: "envd /files, running sandbox" },
    extraCases: ({ source, dockerSource }) => {
      const bytes = randomBytes(FILE_BYTES);
      const sandbox = (source as E2bMachine).sandbox;
      const sdkPath = `${source.workspacePath}/bench/sdk-write.bin`;
      const providerWrite = () => source.files.write("bench/provider-write.bin", bytes);
      return [
        {
          name: "write a 32 MiB file: provider vs the SDK's files.write",
          unit: "MB/s",
          work: FILE_BYTES,
          subject: { label: "provider-e2b files.write", run: providerWrite },
          baseline: {
            label: "e2b SDK files.write",
            run: () => sandbox.files.write(sdkPath, bytes.buffer as ArrayBuffer),
          },
        },
        {
          name: "write a 32 MiB file",
          unit: "MB/s",
          work: FILE_BYTES,
          subject: { label: "provider-e2b", run: providerWrite },
          baseline: { label: "provider-docker", run: () => dockerSource.files.write("bench/docker-write.bin", bytes) },
        },
      ];
    },
  });
} finally {
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
