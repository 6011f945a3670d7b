// `npm run bench -- docker`: provider-docker beside the docker CLI doing the
// same work, in the same run: provision-to-first-exec, exec of `true`, and
// export/import throughput of a 200 MiB home of mixed files, all on the
// default setup. One more case prices the default (the display's container
// and network named at provision, made on the first desktop call) against a
// shared display (`displayContainer: false`, one container).
import { spawn, spawnSync } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Machine } from "@agent-computer/core";
import { computerSeccompProfile } from "@agent-computer/desktop-runtime";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { countBytes, provisionToFirstExec, writeMixedHome } from "@agent-computer/testing/provider-test";
import { dockerTestEnvironment } from "../test/docker-test-environment.js";

const HOME_BYTES = 200 * 1024 * 1024;
const env = await dockerTestEnvironment();
if (env.missing) throw new Error(`The docker bench cannot run: ${env.missing}`);
const { image } = env;
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-docker-bench-"));
const provider = env.provider({ dataDir });
const sharedDisplayProvider = env.provider({ dataDir, displayContainer: false });
const cleanup: Machine[] = [];
const cliContainers: string[] = [];

function docker(args: string[]): string {
  const result = spawnSync("docker", args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`docker ${args[0]} failed: ${result.stderr}`);
  return result.stdout.trim();
}

/** Runs the docker CLI, streaming stdin in and/or counting stdout bytes. */
function dockerStream(args: string[], input?: Readable): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("docker", args, { stdio: [input ? "pipe" : "ignore", "pipe", "pipe"] });
    let bytes = 0;
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    if (input && child.stdin) input.pipe(child.stdin);
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(bytes) : reject(new Error(`docker ${args[0]}: ${stderr}`))));
  });
}

const owner = (path: string) => spawnSync("chown", ["-R", "1000:1000", path]);

try {
  // Machines the steady-state cases share.
  const source = await provider.provision({ computerId: "bench-source", homeKey: "bench-source" });
  cleanup.push(source);
  const sourceHome = join(dataDir, "homes", "bench-source");
  await writeMixedHome(sourceHome, HOME_BYTES);
  owner(sourceHome);
  const target = await provider.provision({ computerId: "bench-target", homeKey: "bench-target" });
  cleanup.push(target);
  await target.stop();
  const targetId = target.ref.slice("docker:".length);
  const sourceId = source.ref.slice("docker:".length);
  const tarFile = join(dataDir, "home.tar");
  await pipeline(await source.files.exportWorkspace(), createWriteStream(tarFile));

  const seccompFile = join(dataDir, "seccomp.json");
  await writeFile(seccompFile, computerSeccompProfile());
  let cliHomes = 0;

  const cases: BenchCase[] = [
    {
      name: "provision to first exec",
      unit: "ms",
      subject: { label: "provider-docker", run: provisionToFirstExec(provider, cleanup) },
      baseline: {
        label: "docker run -d + docker exec",
        run: () => {
          const home = join(dataDir, "homes", `cli-fresh-${cliHomes++}`);
          spawnSync("mkdir", ["-p", home]);
          owner(home);
          const id = docker([
            "run",
            "-d",
            "--init",
            "--user",
            "1000:1000",
            "--shm-size",
            "1g",
            "--security-opt",
            `seccomp=${seccompFile}`,
            "--security-opt",
            "no-new-privileges:true",
            "--mount",
            `type=bind,source=${home},target=/home/computer`,
            image,
            "sleep",
            "infinity",
          ]);
          cliContainers.push(id);
          docker(["exec", id, "true"]);
        },
      },
    },
    {
      name: "provision to first exec: display container vs shared display",
      unit: "ms",
      subject: { label: "displayContainer: true (default)", run: provisionToFirstExec(provider, cleanup) },
      baseline: {
        label: "displayContainer: false",
        run: provisionToFirstExec(sharedDisplayProvider, cleanup, "bench-shared"),
      },
    },
    {
      name: "exec `true` round trip",
      unit: "ms",
      subject: { label: "provider-docker", run: () => source.exec({ argv: ["true"] }) },
      baseline: { label: "docker exec", run: () => docker(["exec", sourceId, "true"]) },
    },
    {
      name: "export 200 MiB home",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: { label: "provider-docker", run: async () => countBytes(await source.files.exportWorkspace()) },
      baseline: {
        label: "docker cp (archive API)",
        run: () => dockerStream(["cp", `${sourceId}:/home/computer/.`, "-"]),
      },
    },
    {
      name: "import 200 MiB home (stopped machine)",
      unit: "MB/s",
      work: HOME_BYTES,
      subject: { label: "provider-docker", run: () => target.files.importWorkspace(createReadStream(tarFile)) },
      baseline: {
        label: "docker cp - (archive API)",
        run: () => dockerStream(["cp", "-", `${targetId}:/home/computer`], createReadStream(tarFile)),
      },
    },
  ];
  await runBench("provider-docker vs the docker CLI", cases, benchOptionsFromArgv());
} finally {
  for (const m of cleanup) await m.destroy().catch(() => {});
  if (cliContainers.length > 0) spawnSync("docker", ["rm", "-f", ...cliContainers]);
  await rm(dataDir, { recursive: true, force: true });
}
