// `npm run bench -- files`: a person's Files window, each figure beside its
// baseline in the same run.
// - A stopped computer's home (200 MiB, mixed files) listed and one 1 KiB
//   file read through `LocalAgentHomeStore.list/read`, against the route
//   without them: restoring the whole stored home to a folder, then reading it.
// - Upload and download of 8 MiB through the files service (HTTP on this
//   host, a control capability, a real Docker computer) against the
//   provider's own `files.write` and `files.read` of the same bytes.
// (Ranged reads through the object store are home-store-s3's bench.)
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime } from "@agent-computer/runtime";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { chooseTestProvider, writeMixedHome } from "@agent-computer/testing/provider-test";
import { createFiles } from "../src/index.js";

const HOME_BYTES = 200 * 1024 * 1024;
const TRANSFER_BYTES = 8 * 1024 * 1024;

async function storeCases(scratch: string): Promise<BenchCase[]> {
  const store = new LocalAgentHomeStore({ dataDir: join(scratch, "data") });
  const home = join(scratch, "home");
  await writeMixedHome(join(home, "bots", "alice"), HOME_BYTES);
  await writeFile(join(home, "bots", "alice", "note.txt"), randomBytes(1024));
  await store.checkpoint({ homeKey: "bench", source: { dir: home } });
  let restores = 0;
  const restoreWhole = async () => {
    const target = join(scratch, `restored-${restores++}`);
    await store.restore({ homeKey: "bench", target: { dir: target } });
    return target;
  };
  return [
    {
      name: "list bots/alice of a stored 200 MiB home",
      unit: "ms",
      subject: { label: "store.list", run: () => store.list("bench", "bots/alice") },
      baseline: {
        label: "restore whole + readdir",
        run: async () => {
          const target = await restoreWhole();
          await readdir(join(target, "bots", "alice"), { withFileTypes: true });
          await rm(target, { recursive: true, force: true });
        },
      },
    },
    {
      name: "read a 1 KiB file of a stored 200 MiB home",
      unit: "ms",
      subject: { label: "store.read", run: () => store.read("bench", "bots/alice/note.txt") },
      baseline: {
        label: "restore whole + readFile",
        run: async () => {
          const target = await restoreWhole();
          await readFile(join(target, "bots", "alice", "note.txt"));
          await rm(target, { recursive: true, force: true });
        },
      },
    },
  ];
}

async function serviceCases(scratch: string): Promise<{ cases: BenchCase[]; close: () => Promise<void> }> {
  const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
  if (chosen.missing) throw new Error(`The files bench needs Docker for its service cases: ${chosen.missing}`);
  const dataDir = join(scratch, "docker-data");
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const runtime = createComputerRuntime({
    provider: chosen.provider({ dataDir }),
    stateStore: new MemoryStateStore(),
    homeStore,
    idleMs: 0,
  });
  const files = createFiles({ runtime, homeStore, secret: randomBytes(32), uploadMaxBytes: 2 * TRANSFER_BYTES });
  const server = createServer((req, res) => {
    if (!files.handleRequest(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const computerId = runtime.computerIdFor({ workspaceId: "files-bench", botId: "alice" });
  const run = runtime.startRun({ workspaceId: "files-bench", botId: "alice" });
  await run.machine();
  await run.end("completed");
  const machine = await runtime.runningMachine(computerId);
  if (!machine) throw new Error("the bench computer is not running");
  const control = await runtime.takeover({ computerId, botId: "alice", holder: "person:bench", ttlMs: 3600_000 });
  const cap = await files.issueFilesCapability({
    computerId,
    botId: "alice",
    mode: "control",
    ttlMs: 3600_000,
    control,
  });
  const bytes = randomBytes(TRANSFER_BYTES);
  await machine.files.write("bots/alice/down.bin", bytes);
  const api = (op: string, path: string, init: RequestInit = {}) =>
    fetch(`${origin}/files/api/${op}?${new URLSearchParams({ path })}`, {
      ...init,
      headers: { Authorization: `Bearer ${cap.token}` },
    });
  const cases: BenchCase[] = [
    {
      name: "upload 8 MiB to a Docker computer",
      unit: "MB/s",
      work: TRANSFER_BYTES,
      subject: {
        label: "files service PUT",
        run: async () => {
          const answer = await api("upload", "bots/alice/up.bin", { method: "PUT", body: bytes });
          if (answer.status !== 201) throw new Error(`upload answered ${answer.status}`);
        },
      },
      baseline: { label: "machine.files.write", run: () => machine.files.write("bots/alice/up-direct.bin", bytes) },
    },
    {
      name: "download 8 MiB from a Docker computer",
      unit: "MB/s",
      work: TRANSFER_BYTES,
      subject: {
        label: "files service GET",
        run: async () => {
          const got = Buffer.from(await (await api("download", "bots/alice/down.bin")).arrayBuffer());
          if (got.length !== TRANSFER_BYTES) throw new Error(`downloaded ${got.length} bytes`);
        },
      },
      baseline: { label: "machine.files.read", run: () => machine.files.read("bots/alice/down.bin") },
    },
  ];
  return {
    cases,
    close: async () => {
      await runtime.releaseTakeover(control);
      await runtime.deleteComputer(computerId);
      files.close();
      server.close();
    },
  };
}

const scratch = await mkdtemp(join(tmpdir(), "ac-bench-files-"));
try {
  const options = benchOptionsFromArgv();
  await runBench("files: the stored home", await storeCases(scratch), options);
  const service = await serviceCases(scratch);
  try {
    await runBench("files: the service on Docker", service.cases, options);
  } finally {
    await service.close();
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
