// `npm run bench -- box`: provider-box (its client against the emulator,
// whose boxes are containers of the same engine) beside provider-docker on
// that engine, in the same run: provision to first exec, an exec round
// trip, a desktop observe, and export/import of a 200 MiB home of mixed
// files. The ratio is the cost of the REST control plane, detached
// commands with polled base64 output (a start and at least one poll per
// command), the private route to the resident service, and the files API's
// base64 parts for homes, against the Engine API and a mounted home.
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
import { boxProvider } from "../src/index.js";
import { BoxEmulator } from "../src/testing/index.js";

const HOME_BYTES = 200 * 1024 * 1024;
const API_KEY = "box_bench_key";
// The baseline, and the engine whose containers back the emulator's boxes.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The box bench cannot run: ${host.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-box-bench-"));
const emulator = new BoxEmulator({ docker: host.docker as Docker, apiKey: API_KEY, baseImage: host.image as string });
await emulator.start();
const box = boxProvider({ apiKey: API_KEY, baseUrl: emulator.baseUrl });
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

  const boxSource = await box.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(boxSource);
  await boxSource.files.importWorkspace(createReadStream(tarFile));
  const boxTarget = await box.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(boxTarget);
  const dockerTarget = await docker.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(dockerTarget);
  await dockerTarget.stop();

  const desktopOf = async (machine: Machine) => {
    const desktop = await (machine.openDesktop as NonNullable<Machine["openDesktop"]>)("bench-bot");
    desktops.push(desktop);
    return desktop;
  };
  const boxDesktop = await desktopOf(boxTarget);
  const dockerDesktop = await desktopOf(dockerSource);

  const cases: BenchCase[] = [
    {
      name: "provision to first exec",
      unit: "ms",
      subject: { label: "provider-box", run: provisionToFirstExec(box, cleanup) },
      baseline: { label: "provider-docker", run: provisionToFirstExec(docker, cleanup) },
    },
    {
      name: "exec `true` round trip",
      unit: "ms",
      subject: { label: "provider-box (detached + poll)", run: () => boxSource.exec({ argv: ["true"] }) },
      baseline: { label: "provider-docker", run: () => dockerSource.exec({ argv: ["true"] }) },
    },
    {
      name: "observe (PNG of the desktop)",
      unit: "ms",
      subject: { label: "provider-box (private route)", run: () => boxDesktop.observe() },
      baseline: { label: "provider-docker", run: () => dockerDesktop.observe() },
    },
    {
      name: "export 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-box (files API parts)",
        run: async () => countBytes(await boxSource.files.exportWorkspace()),
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
        label: "provider-box (files API parts, running box)",
        run: () => boxTarget.files.importWorkspace(createReadStream(tarFile)),
      },
      baseline: {
        label: "provider-docker (stopped)",
        run: () => dockerTarget.files.importWorkspace(createReadStream(tarFile)),
      },
    },
    {
      // Why homes move through the files API: the same kind of tar through polled exec output (compare the ratios).
      name: "export 200 MiB home through polled exec output (not used)",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-box (exec, onOutput)",
        run: async () => {
          let bytes = 0;
          await boxSource.exec({
            shell: 'cd "$HOME" && tar -cf - .',
            maxOutputBytes: 1024,
            onOutput: (stream, chunk) => {
              if (stream === "stdout") bytes += chunk.length;
            },
          });
          return bytes;
        },
      },
      baseline: {
        label: "provider-docker (mounted)",
        run: async () => countBytes(await dockerSource.files.exportWorkspace()),
      },
    },
  ];
  await runBench("provider-box (emulator) vs provider-docker, same engine", cases, benchOptionsFromArgv());
} finally {
  for (const d of desktops) await d.release().catch(() => {});
  for (const m of cleanup) await m.destroy().catch(() => {});
  await emulator.close();
  await rm(dataDir, { recursive: true, force: true });
}
