// `npm run bench -- desktop [--runs N]`: the shared Linux desktop runtime on
// the reference provider (Docker) as it comes by default (the desktops in
// each computer's display container), each figure beside the same X work
// done by raw `docker exec` into the container that holds the desktops, in
// the same run (the cases: testing's desktop-bench.ts; provider-kubernetes
// runs the same bench on its wire fixture).
// Needs the engine and the image (`npx agent-computer-image build`) and a
// build of core, desktop-runtime and provider-docker (it passes
// provider-docker's build to the shared test helper as the provider to
// drive: desktop-runtime itself never depends on a provider).
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import { checkDockerHost, DISPLAY_LABELS, DockerMachine, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, gatewayPidOfContainer, runDesktopBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";

const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (chosen.missing) throw new Error(`The desktop bench cannot run: ${chosen.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-desktop-bench-"));
// The default setup: nothing but where homes live.
const provider = chosen.provider({ dataDir });
const idOf = (m: Machine) => m.ref.slice("docker:".length);
/**
 * The container that holds a computer's desktops: its display container,
 * which the computer's label names (the computer's own on a shared display).
 */
const desktopContainers = new Map<string, string>();
const desktopContainer = (m: Machine) => {
  const known = desktopContainers.get(m.ref);
  if (known) return known;
  const format = `{{index .Config.Labels "${DISPLAY_LABELS.displayContainer}"}}`;
  const r = spawnSync("docker", ["inspect", "-f", format, idOf(m)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`docker inspect ${m.ref} failed: ${r.stderr}`);
  const label = r.stdout.trim();
  const holder = label && label !== "<no value>" ? label : idOf(m);
  desktopContainers.set(m.ref, holder);
  return holder;
};

try {
  await runDesktopBench(
    {
      name: "docker",
      provision: (role) => provider.provision({ computerId: role, homeKey: `${role}-${Date.now()}` }),
      rawExec: (machine, script) => {
        const holder = desktopContainer(machine);
        const started = performance.now();
        const r = spawnSync("docker", ["exec", holder, "sh", "-c", script], {
          maxBuffer: 64 * 1024 * 1024,
        });
        if (r.status !== 0) throw new Error(`docker exec failed: ${r.stderr.toString()}`);
        return { stdout: r.stdout, ms: performance.now() - started };
      },
      // The same container through the provider's own exec, one `desktop` command per call.
      openExecDesktop: (machine, bot) => {
        const host = { docker: chosen.docker, user: "1000:1000", stopTimeoutSeconds: 5 };
        const holder = new DockerMachine(host, desktopContainer(machine), machine.workspacePath, "");
        return new LinuxDesktopRuntime(holder, { transport: "exec", launchPrograms: ["chromium"] }).openDesktop(bot);
      },
      servicePid: (machine) => gatewayPidOfContainer(desktopContainer(machine)),
    },
    benchOptionsFromArgv(),
  );
} finally {
  await rm(dataDir, { recursive: true, force: true }).catch(() => {});
}
