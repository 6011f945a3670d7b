// `npm run bench -- kubernetes`: provider-kubernetes (through the real
// client and the wire fixture, whose pods are containers of the same
// engine) beside provider-docker on that engine, in the same run:
// provision-to-first-exec, and export/import throughput of a 200 MiB home
// of mixed files. The ratio is the cost of going through the Kubernetes
// API and `pods/exec` instead of the Engine API and a mounted home.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Machine } from "@agent-computer/core";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { dockerProvider } from "@agent-computer/provider-docker";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import Docker from "dockerode";
import { kubernetesProvider } from "../src/index.js";
import { KubernetesWireFixture } from "../test/kubernetes-wire-fixture.js";

const HOME_BYTES = 200 * 1024 * 1024;
const NAMESPACE = "agent-computer-bench";
const image = await computerImageRef();
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-kubernetes-bench-"));
const fixture = new KubernetesWireFixture(new Docker(), [NAMESPACE]);
await fixture.start();
const kubernetes = kubernetesProvider({ kubeConfig: fixture.kubeConfig(), namespace: NAMESPACE, image }, {});
const docker = dockerProvider({ image, dataDir });
const cleanup: Machine[] = [];

async function count(stream: Readable): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  return bytes;
}

/** A home of mixed files: a few large, many medium, very many small (as the Docker bench). */
async function makeMixedHome(dir: string): Promise<void> {
  let left = HOME_BYTES;
  const put = async (rel: string, size: number) => {
    await mkdir(join(dir, rel, ".."), { recursive: true });
    await writeFile(join(dir, rel), randomBytes(size));
    left -= size;
  };
  for (let i = 0; i < 2; i++) await put(`large/blob-${i}.bin`, 50 * 1024 * 1024);
  for (let i = 0; i < 60; i++) await put(`medium/${i % 6}/file-${i}.dat`, 1024 * 1024);
  for (let i = 0; left > 0; i++)
    await put(`small/${i % 40}/note-${i}.txt`, Math.min(left, 1024 + ((i * 7919) % 30_000)));
}

try {
  const dockerSource = await docker.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(dockerSource);
  const sourceHome = join(dataDir, "homes", "bench-source");
  await makeMixedHome(sourceHome);
  spawnSync("chown", ["-R", "1000:1000", sourceHome]);
  const tarFile = join(dataDir, "home.tar");
  await pipeline(await dockerSource.files.exportWorkspace(), createWriteStream(tarFile));

  const podSource = await kubernetes.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(podSource);
  await podSource.files.importWorkspace(createReadStream(tarFile));
  const podTarget = await kubernetes.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(podTarget);
  const dockerTarget = await docker.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(dockerTarget);
  await dockerTarget.stop();
  let fresh = 0;

  const cases: BenchCase[] = [
    {
      name: "provision to first exec",
      unit: "ms",
      subject: {
        label: "provider-kubernetes",
        run: async () => {
          const m = await kubernetes.provision({ computerId: "bench-fresh", homeKey: `bench-fresh-${fresh++}` });
          cleanup.push(m);
          await m.exec({ argv: ["true"] });
        },
      },
      baseline: {
        label: "provider-docker",
        run: async () => {
          const m = await docker.provision({ computerId: "bench-fresh", homeKey: `bench-fresh-${fresh++}` });
          cleanup.push(m);
          await m.exec({ argv: ["true"] });
        },
      },
    },
    {
      name: "exec `true` round trip",
      unit: "ms",
      subject: { label: "provider-kubernetes", run: () => podSource.exec({ argv: ["true"] }) },
      baseline: { label: "provider-docker", run: () => dockerSource.exec({ argv: ["true"] }) },
    },
    {
      name: "export 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-kubernetes (pods/exec)",
        run: async () => count(await podSource.files.exportWorkspace()),
      },
      baseline: {
        label: "provider-docker (mounted)",
        run: async () => count(await dockerSource.files.exportWorkspace()),
      },
    },
    {
      name: "import 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-kubernetes (running pod)",
        run: () => podTarget.files.importWorkspace(createReadStream(tarFile)),
      },
      baseline: {
        label: "provider-docker (stopped)",
        run: () => dockerTarget.files.importWorkspace(createReadStream(tarFile)),
      },
    },
  ];
  await runBench("provider-kubernetes (wire fixture) vs provider-docker, same engine", cases, benchOptionsFromArgv());
} finally {
  for (const m of cleanup) await m.destroy().catch(() => {});
  await fixture.close();
  await rm(dataDir, { recursive: true, force: true });
}
