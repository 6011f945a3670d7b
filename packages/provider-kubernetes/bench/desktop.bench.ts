// `npm run bench -- desktop [--runs N]`, on Kubernetes: the same desktop
// bench as Docker's (testing's desktop-bench.ts) through provider-kubernetes,
// the real client and the wire fixture, whose pods are containers of the
// engine; the baseline is `docker exec` into the pod's container.
import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, gatewayPidOfContainer, runDesktopBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { kubernetesProvider } from "../src/index.js";
import { KubernetesWireFixture } from "../test/kubernetes-wire-fixture.js";

const NAMESPACE = "agent-computer-desktop-bench";
const host = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (host.missing) throw new Error(`The kubernetes desktop bench cannot run: ${host.missing}`);
const fixture = new KubernetesWireFixture(host.docker, [NAMESPACE]);
await fixture.start();
// The Chromium seccomp profile, as an operator installs it on the nodes (the README).
const provider = kubernetesProvider(
  {
    kubeConfig: fixture.kubeConfig(),
    namespace: NAMESPACE,
    image: host.image,
    seccompLocalhostProfile: "agent-computer/chromium.json",
    // One container, so the exec baseline, the exec runtime and the service all drive the same display
    // (the display container's desktop calls take the same path, through the display's exec and port).
    displayContainer: false,
  },
  {},
);
const containerOf = (m: Machine) => {
  const pod = m.ref.slice(`kubernetes:${NAMESPACE}/`.length);
  const id = fixture.containerOf(NAMESPACE, pod);
  if (!id) throw new Error(`No container behind ${m.ref}`);
  return id;
};

try {
  await runDesktopBench(
    {
      name: "kubernetes (wire fixture)",
      provision: (role) => provider.provision({ computerId: role, homeKey: `${role}-${Date.now()}` }),
      rawExec: (machine, script) => {
        const started = performance.now();
        const r = spawnSync("docker", ["exec", containerOf(machine), "sh", "-c", script], {
          maxBuffer: 64 * 1024 * 1024,
        });
        if (r.status !== 0) throw new Error(`docker exec failed: ${r.stderr.toString()}`);
        return { stdout: r.stdout, ms: performance.now() - started };
      },
      openExecDesktop: (machine, bot) => new LinuxDesktopRuntime(machine, { transport: "exec" }).openDesktop(bot),
      servicePid: (machine) => gatewayPidOfContainer(containerOf(machine)),
    },
    benchOptionsFromArgv(),
  );
} finally {
  await fixture.close();
}
