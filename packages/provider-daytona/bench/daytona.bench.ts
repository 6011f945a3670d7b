// `npm run bench -- daytona`: provider-daytona (the real @daytonaio/sdk
// against the emulator, whose sandboxes are containers of the same engine)
// beside provider-docker on that engine, in the same run: provision to
// first exec, an exec round trip, a desktop observe, and export/import of
// a 200 MiB home of mixed files. The ratio is the cost of the REST
// control plane, the toolbox's sessions API (a session, an async exec, a
// log websocket per command, base64-framed output) and the toolbox's
// multipart bulk download and upload for homes, against the Engine API and
// a mounted home.
import { spawnSync } from "node:child_process";
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
import type Docker from "dockerode";
import { daytonaProvider } from "../src/index.js";
import { DaytonaEmulator } from "../src/testing/index.js";

const HOME_BYTES = 200 * 1024 * 1024;
const API_KEY = "dtn_bench_key";
// The baseline, and the engine whose containers back the emulator's sandboxes.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The daytona bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-daytona-bench-"));
const emulator = new DaytonaEmulator({ docker: host.docker as Docker, apiKey: API_KEY });
await emulator.start();
const daytona = daytonaProvider({
  apiKey: API_KEY,
  apiUrl: emulator.apiUrl,
  snapshot: host.image,
  stateUpdates: "polling",
});
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

  const sandboxSource = await daytona.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(sandboxSource);
  await sandboxSource.files.importWorkspace(createReadStream(tarFile));
  const sandboxTarget = await daytona.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(sandboxTarget);
  const dockerTarget = await docker.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(dockerTarget);
  await dockerTarget.stop();

  const desktopOf = async (machine: Machine) => {
    const desktop = await (machine.openDesktop as NonNullable<Machine["openDesktop"]>)("bench-bot");
    desktops.push(desktop);
    return desktop;
  };
  const sandboxDesktop = await desktopOf(sandboxTarget);
  const dockerDesktop = await desktopOf(dockerSource);

  const cases: BenchCase[] = [
    {
      name: "provision to first exec",
      unit: "ms",
      subject: { label: "provider-daytona", run: provisionToFirstExec(daytona, cleanup) },
      baseline: { label: "provider-docker", run: provisionToFirstExec(docker, cleanup) },
    },
    {
      name: "exec `true` round trip",
      unit: "ms",
      subject: { label: "provider-daytona (sessions API)", run: () => sandboxSource.exec({ argv: ["true"] }) },
      baseline: { label: "provider-docker", run: () => dockerSource.exec({ argv: ["true"] }) },
    },
    {
      name: "observe (PNG of the desktop)",
      unit: "ms",
      subject: { label: "provider-daytona", run: () => sandboxDesktop.observe() },
      baseline: { label: "provider-docker", run: () => dockerDesktop.observe() },
    },
    {
      name: "export 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-daytona (bulk download)",
        run: async () => countBytes(await sandboxSource.files.exportWorkspace()),
      },
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
        label: "provider-daytona (bulk upload, running sandbox)",
        run: () => sandboxTarget.files.importWorkspace(createReadStream(tarFile)),
      },
      baseline: {
        label: "provider-docker (stopped)",
        run: () => dockerTarget.files.importWorkspace(createReadStream(tarFile)),
      },
    },
  ];
  await runBench("provider-daytona (emulator) vs provider-docker, same engine", cases, benchOptionsFromArgv());
} finally {
  for (const d of desktops) await d.release().catch(() => {});
  for (const m of cleanup) await m.destroy().catch(() => {});
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
