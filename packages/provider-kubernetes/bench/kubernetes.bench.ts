// `npm run bench -- kubernetes`: provider-kubernetes through the real
// client and the wire fixture (on HTTPS, whose pods are containers of the
// same engine), in the same run: provision-to-first-exec and an exec round
// trip beside provider-docker on that engine; export and import of a 200
// MiB home of mixed files beside `kubectl exec` + `tar` of the same home
// through the same fixture (the fair baseline: same API server, same
// pods/exec stream, only the client differs); and the export of a home
// mounted from a claim (backed by the same host folder Docker mounts, as
// KUBERNETES_SANDBOX_HOME_CLAIM does) beside Docker's mounted home.
import { spawnSync } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { lstat, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Machine } from "@agent-computer/core";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import {
  chooseTestProvider,
  countBytes,
  provisionToFirstExec,
  writeMixedHome,
} from "@agent-computer/testing/provider-test";
import { type KubernetesMachine, kubernetesProvider } from "../src/index.js";
import { KUBECTL, runProgram, startKubectlFixture } from "../test/kubectl-access.js";
import { type KubectlTarget, kubectlExportHome, kubectlImportHome } from "../test/kubectl-tar.js";
import { WireFixtureProcess } from "../test/wire-fixture-process.js";

const HOME_BYTES = 200 * 1024 * 1024;
const NAMESPACE = "agent-computer-bench";
// The baseline, and the engine whose containers back the fixture's pods.
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The kubernetes bench cannot run: ${host.missing}`);
const kubectlVersion = await runProgram(KUBECTL, ["version", "--client"]);
if (kubectlVersion.status !== 0)
  throw new Error(`The kubernetes bench needs kubectl (${KUBECTL}; .ci/kubectl-setup.sh): ${kubectlVersion.stderr}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-kubernetes-bench-"));
const kubectlDir = await mkdtemp(join(tmpdir(), "agent-computer-kubernetes-bench-kubectl-"));
// HTTPS, since kubectl sends its token only over TLS: our client goes through the same server,
// which runs in a process of its own as a real API server does (wire-fixture-process.ts says why).
const { fixture, kubectlArgs } = await startKubectlFixture(NAMESPACE, kubectlDir, (tls) =>
  WireFixtureProcess.start([NAMESPACE], tls),
);
const kubernetes = kubernetesProvider(
  { kubeConfig: fixture.kubeConfig(), namespace: NAMESPACE, image: host.image },
  {},
);
const docker = host.provider({ dataDir });
// The claim's folder is Docker's data folder, so a mounted pod sees the source home.
await fixture.addClaim(NAMESPACE, "bench-data", dataDir);
await fixture.addForeignPod("bench-app", "bench-api-0", { app: "bench-api" });
const mountedKubernetes = kubernetesProvider(
  {
    kubeConfig: fixture.kubeConfig(),
    namespace: NAMESPACE,
    image: host.image,
    homeClaim: "bench-data",
    homeColocateNamespace: "bench-app",
    homeColocateLabels: { app: "bench-api" },
    homeClaimLocalPath: dataDir,
  },
  {},
);
const cleanup: Machine[] = [];

try {
  const dockerSource = await docker.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(dockerSource);
  const sourceHome = join(dataDir, "homes", "bench-source");
  await writeMixedHome(sourceHome, HOME_BYTES);
  spawnSync("chown", ["-R", "1000:1000", sourceHome]);
  const tarFile = join(dataDir, "home.tar");
  await pipeline(await dockerSource.files.exportWorkspace(), createWriteStream(tarFile));

  const podSource = await kubernetes.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(podSource);
  await podSource.files.importWorkspace(createReadStream(tarFile));
  const podTarget = await kubernetes.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(podTarget);
  const mountedSource = await mountedKubernetes.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(mountedSource);
  const dockerTarget = await docker.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(dockerTarget);
  await dockerTarget.stop();
  const kubectlAt = (machine: Machine): KubectlTarget => ({
    kubectlArgs,
    pod: (machine as KubernetesMachine).podName,
    container: "computer",
  });
  const sourceHomeInPod = (podSource as KubernetesMachine).workspacePath;

  const cases: BenchCase[] = [
    {
      name: "provision to first exec",
      unit: "ms",
      subject: { label: "provider-kubernetes", run: provisionToFirstExec(kubernetes, cleanup) },
      baseline: { label: "provider-docker", run: provisionToFirstExec(docker, cleanup) },
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
        run: async () => countBytes(await podSource.files.exportWorkspace()),
      },
      baseline: {
        label: "kubectl exec -- tar -c",
        run: () => kubectlExportHome(kubectlAt(podSource), sourceHomeInPod),
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
        label: "kubectl exec -i -- tar -x",
        // Beside the target's home, so both sides write to the same pod's disk.
        run: kubectlImportHome(
          kubectlAt(podTarget),
          `${(podTarget as KubernetesMachine).workspacePath}-kubectl`,
          tarFile,
          await regularFileBytes(sourceHome),
        ),
      },
    },
    {
      name: "export 200 MiB home, mounted from a claim",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: {
        label: "provider-kubernetes (home claim)",
        run: async () => countBytes(await mountedSource.files.exportWorkspace()),
      },
      baseline: {
        label: "provider-docker (mounted)",
        run: async () => countBytes(await dockerSource.files.exportWorkspace()),
      },
    },
  ];
  await runBench(
    "provider-kubernetes (wire fixture) vs provider-docker and kubectl, same engine",
    cases,
    benchOptionsFromArgv(),
  );
} finally {
  for (const m of cleanup) await m.destroy().catch(() => {});
  await fixture.close();
  await rm(dataDir, { recursive: true, force: true });
  await rm(kubectlDir, { recursive: true, force: true });
}

/** The bytes of the regular files under `dir`: what a tar of it unpacks to. */
async function regularFileBytes(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) bytes += await regularFileBytes(path);
    else if (entry.isFile()) bytes += (await lstat(path)).size;
  }
  return bytes;
}
