// `npm run bench -- e2b`: provider-e2b (through the real e2b SDK and the
// loopback emulator, whose sandboxes are containers of the same engine)
// beside provider-docker on that engine, in the same run: provision to
// first exec, exec round trip, observe, export and import of a 200 MiB
// home of mixed files; and a file written through the provider beside the
// SDK's own `files.write` of the same bytes (docs/architecture.md §12).

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { DesktopSession, Machine } from "@agent-computer/core";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import {
  chooseTestProvider,
  countBytes,
  provisionToFirstExec,
  writeMixedHome,
} from "@agent-computer/testing/provider-test";
import { type E2bMachine, e2bProvider } from "../src/index.js";
import { E2bEmulator } from "../src/testing/index.js";

const HOME_BYTES = 200 * 1024 * 1024;
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
const docker = host.provider({ dataDir });
const cleanup: Machine[] = [];
const desktops: DesktopSession[] = [];

try {
  const dockerSource = await docker.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(dockerSource);
  const sourceHome = join(dataDir, "homes", "bench-source");
  await writeMixedHome(sourceHome, HOME_BYTES);
  spawnSync("chown", ["-R", "1000:1000", sourceHome]);
  const tarFile = join(dataDir, "home.tar");
  await pipeline(await dockerSource.files.exportWorkspace(), createWriteStream(tarFile));

  const e2bSource = (await e2b.provision({ computerId: "bench-source", homeKey: "bench-source" })) as E2bMachine;
  cleanup.push(e2bSource);
  await e2bSource.files.importWorkspace(createReadStream(tarFile));
  const e2bTarget = await e2b.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(e2bTarget);
  const dockerTarget = await docker.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(dockerTarget);
  await dockerTarget.stop();

  const e2bDesktop = await e2bSource.openDesktop?.("bench");
  const dockerDesktop = await dockerSource.openDesktop?.("bench");
  if (!e2bDesktop || !dockerDesktop) throw new Error("a desktop did not open");
  desktops.push(e2bDesktop, dockerDesktop);

  const bytes = randomBytes(FILE_BYTES);
  const sdkPath = `${e2bSource.workspacePath}/bench/sdk-write.bin`;

  const cases: BenchCase[] = [
    {
      name: "provision to first exec",
      unit: "ms",
      subject: { label: "provider-e2b", run: provisionToFirstExec(e2b, cleanup) },
      baseline: { label: "provider-docker", run: provisionToFirstExec(docker, cleanup) },
    },
    {
      name: "exec `true` round trip",
      unit: "ms",
      subject: { label: "provider-e2b", run: () => e2bSource.exec({ argv: ["true"] }) },
      baseline: { label: "provider-docker", run: () => dockerSource.exec({ argv: ["true"] }) },
    },
    {
      name: "observe (PNG)",
      unit: "ms",
      subject: { label: "provider-e2b", run: () => e2bDesktop.observe() },
      baseline: { label: "provider-docker", run: () => dockerDesktop.observe() },
    },
    {
      name: "export 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: { label: "provider-e2b (envd)", run: async () => countBytes(await e2bSource.files.exportWorkspace()) },
      baseline: {
        label: "provider-docker (mounted)",
        run: async () => countBytes(await dockerSource.files.exportWorkspace()),
      },
    },
    {
      name: "import 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-e2b (running sandbox)",
        run: () => e2bTarget.files.importWorkspace(createReadStream(tarFile)),
      },
      baseline: {
        label: "provider-docker (stopped)",
        run: () => dockerTarget.files.importWorkspace(createReadStream(tarFile)),
      },
    },
    {
      name: "write a 32 MiB file: provider vs the SDK's files.write",
      unit: "MB/s",
      work: FILE_BYTES,
      subject: {
        label: "provider-e2b files.write",
        run: () => e2bSource.files.write("bench/provider-write.bin", bytes),
      },
      baseline: {
        label: "e2b SDK files.write",
        run: () => e2bSource.sandbox.files.write(sdkPath, bytes.buffer as ArrayBuffer),
      },
    },
    {
      name: "write a 32 MiB file",
      unit: "MB/s",
      work: FILE_BYTES,
      subject: { label: "provider-e2b", run: () => e2bSource.files.write("bench/provider-write.bin", bytes) },
      baseline: { label: "provider-docker", run: () => dockerSource.files.write("bench/docker-write.bin", bytes) },
    },
  ];
  await runBench("provider-e2b (emulator) vs provider-docker, same engine", cases, benchOptionsFromArgv());
} finally {
  for (const d of desktops) await d.release().catch(() => {});
  for (const m of cleanup) await m.destroy().catch(() => {});
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
