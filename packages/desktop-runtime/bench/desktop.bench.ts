// `npm run bench -- desktop [--runs N]`: the shared Linux desktop runtime on
// the reference provider (Docker), each figure beside the same X work done
// by raw `docker exec` in the same run (the cases: testing's desktop-bench.ts;
// provider-kubernetes runs the same bench on its wire fixture).
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
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, gatewayPidOfContainer, runDesktopBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";

const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (chosen.missing) throw new Error(`The desktop bench cannot run: ${chosen.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-desktop-bench-"));
const provider = chosen.provider({ dataDir });
const idOf = (m: Machine) => m.ref.slice("docker:".length);

try {
  await runDesktopBench(
    {
      name: "docker",
      provision: (role) => provider.provision({ computerId: role, homeKey: `${role}-${Date.now()}` }),
      rawExec: (machine, script) => {
        const started = performance.now();
        const r = spawnSync("docker", ["exec", idOf(machine), "sh", "-c", script], { maxBuffer: 64 * 1024 * 1024 });
        if (r.status !== 0) throw new Error(`docker exec failed: ${r.stderr.toString()}`);
        return { stdout: r.stdout, ms: performance.now() - started };
      },
      openExecDesktop: (machine, bot) => new LinuxDesktopRuntime(machine, { transport: "exec" }).openDesktop(bot),
      servicePid: (machine) => gatewayPidOfContainer(idOf(machine)),
    },
    benchOptionsFromArgv(),
  );
} finally {
  await rm(dataDir, { recursive: true, force: true }).catch(() => {});
}
