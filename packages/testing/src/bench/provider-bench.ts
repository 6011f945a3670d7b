// The provider bench every hosted or remote provider runs beside Docker
// (`npm run bench -- e2b | daytona | box | kubernetes`): provision to first
// exec, an exec round trip, a desktop observe, and export/import of a
// 200 MiB home of mixed files, each on the provider under test and on
// provider-docker on the same engine, in the same run. A provider adds its
// own cases (e2b: a file write against its SDK's) through `extraCases`.
import { spawnSync } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { DesktopSession, Machine, SandboxProvider } from "@agent-computer/core";
import { countBytes, writeMixedHome } from "../provider-test/mixed-home.js";
import { provisionToFirstExec } from "../provider-test/provision-to-first-exec.js";
import type { BenchCase } from "./bench-case.js";
import { type BenchOptions, runBench } from "./run-bench.js";

export const PROVIDER_BENCH_HOME_BYTES = 200 * 1024 * 1024;

/** The machines the standard cases ran on, for a provider's own cases. */
export interface ProviderBenchMachines {
  /** The provider's machine holding the 200 MiB home, with a desktop open. */
  readonly source: Machine;
  /** Docker's machine holding the same home. */
  readonly dockerSource: Machine;
}

export interface ProviderBenchOptions extends BenchOptions {
  /** "provider-e2b (emulator)": the table's title and the subject labels. */
  readonly name: string;
  readonly provider: SandboxProvider;
  /** provider-docker on the engine that backs the provider's machines. */
  readonly docker: SandboxProvider;
  /** Where Docker keeps homes (`dockerProvider({ dataDir })`): the source home is written there. */
  readonly dockerDataDir: string;
  /** How the provider moves homes, for the labels ("bulk download", "envd /files"). */
  readonly transfer?: { readonly export?: string; readonly import?: string };
  readonly extraCases?: (machines: ProviderBenchMachines) => BenchCase[] | Promise<BenchCase[]>;
}

export async function runProviderBench(options: ProviderBenchOptions): Promise<void> {
  const { provider, docker, name } = options;
  const cleanup: Machine[] = [];
  const desktops: DesktopSession[] = [];
  const provision = async (on: SandboxProvider, role: string) => {
    const machine = await on.provision({ computerId: role, homeKey: role });
    cleanup.push(machine);
    return machine;
  };
  const desktopOf = async (machine: Machine) => {
    const desktop = await machine.openDesktop?.("bench-bot");
    if (!desktop) throw new Error(`${machine.ref} opened no desktop`);
    desktops.push(desktop);
    return desktop;
  };
  try {
    const dockerSource = await provision(docker, "bench-source");
    const sourceHome = join(options.dockerDataDir, "homes", "bench-source");
    await writeMixedHome(sourceHome, PROVIDER_BENCH_HOME_BYTES);
    spawnSync("chown", ["-R", "1000:1000", sourceHome]);
    const tarFile = join(options.dockerDataDir, "bench-home.tar");
    await pipeline(await dockerSource.files.exportWorkspace(), createWriteStream(tarFile));

    const source = await provision(provider, "bench-source");
    await source.files.importWorkspace(createReadStream(tarFile));
    const target = await provision(provider, "bench-target");
    const dockerTarget = await provision(docker, "bench-target");
    await dockerTarget.stop();
    const [desktop, dockerDesktop] = [await desktopOf(source), await desktopOf(dockerSource)];
    const via = (how: string | undefined) => (how ? `${name} (${how})` : name);

    const cases: BenchCase[] = [
      {
        name: "provision to first exec",
        unit: "ms",
        subject: { label: name, run: provisionToFirstExec(provider, cleanup) },
        baseline: { label: "provider-docker", run: provisionToFirstExec(docker, cleanup) },
      },
      {
        name: "exec `true` round trip",
        unit: "ms",
        subject: { label: name, run: () => source.exec({ argv: ["true"] }) },
        baseline: { label: "provider-docker", run: () => dockerSource.exec({ argv: ["true"] }) },
      },
      {
        name: "observe (PNG of the desktop)",
        unit: "ms",
        subject: { label: name, run: () => desktop.observe() },
        baseline: { label: "provider-docker", run: () => dockerDesktop.observe() },
      },
      {
        name: "export 200 MiB home",
        unit: "MB/s",
        work: PROVIDER_BENCH_HOME_BYTES,
        subject: {
          label: via(options.transfer?.export),
          run: async () => countBytes(await source.files.exportWorkspace()),
        },
        baseline: {
          label: "provider-docker (mounted)",
          run: async () => countBytes(await dockerSource.files.exportWorkspace()),
        },
      },
      {
        name: "import 200 MiB home",
        unit: "MB/s",
        work: PROVIDER_BENCH_HOME_BYTES,
        subject: {
          label: via(options.transfer?.import),
          run: () => target.files.importWorkspace(createReadStream(tarFile)),
        },
        baseline: {
          label: "provider-docker (stopped)",
          run: () => dockerTarget.files.importWorkspace(createReadStream(tarFile)),
        },
      },
      ...((await options.extraCases?.({ source, dockerSource })) ?? []),
    ];
    await runBench(`${name} vs provider-docker, same engine`, cases, options);
  } finally {
    for (const d of desktops) await d.release().catch(() => {});
    for (const m of cleanup) await m.destroy().catch(() => {});
  }
}
