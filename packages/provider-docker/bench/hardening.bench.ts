// `npm run bench -- hardening [--runs N]`: what the Docker provider's
// hardening costs (docs/architecture.md §9, issue 21 #7). The subject is a
// computer as the provider makes it: every capability dropped but
// SYS_CHROOT, CPU, memory and pids limits. The baseline is the same
// container, made from the subject's own inspected configuration with only
// those knobs back at Docker's defaults (the engine's default capabilities,
// no limits), then driven through the same provider by `reconnect`. Both
// run the image's seccomp profile and no-new-privileges, and both are
// checked to start Chromium with its sandbox. It prints what the computer
// ends up with: effective and bounding capabilities, limits, and what the
// seccomp profile lets a bot do.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DesktopSession, Machine } from "@agent-computer/core";
import { benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import Docker from "dockerode";
import { giveHomeToComputer } from "../src/computer-home-owner.js";
import { checkDockerHost, dockerProvider } from "../src/index.js";

const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (chosen.missing) throw new Error(`The hardening bench cannot run: ${chosen.missing}`);
const docker = new Docker();
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-hardening-bench-"));
// One container per computer (displayContainer: false): the twin below copies the computer's own
// configuration, and a display container, by default beside it, gets the same settings.
const provider = chosen.provider({ dataDir, displayContainer: false });
const options = benchOptionsFromArgv();
const write = (line: string) => process.stdout.write(`${line}\n`);
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString().trim();
const machines: Machine[] = [];

/** The subject's container again, with Docker's default capabilities and no limits, on its own home. */
async function unhardenedTwin(of: Machine): Promise<Machine> {
  const info = await docker.getContainer(of.ref.slice("docker:".length)).inspect();
  const home = join(dataDir, "homes", `unhardened-${Date.now()}`);
  await mkdir(home, { recursive: true });
  await giveHomeToComputer(home, false);
  const {
    CapDrop: _drop,
    CapAdd: _add,
    Memory: _m,
    MemorySwap: _s,
    NanoCpus: _c,
    PidsLimit: _p,
    ...kept
  } = info.HostConfig;
  const container = await docker.createContainer({
    ...info.Config,
    name: `agent-computer-unhardened-${Date.now()}`,
    HostConfig: {
      ...kept,
      Mounts: [{ Type: "bind", Source: home, Target: of.workspacePath }],
      PortBindings: info.HostConfig.PortBindings,
    },
  });
  await container.start();
  const machine = await provider.reconnect(`docker:${container.id}`);
  if (machine === "gone") throw new Error("the unhardened twin was not reconnected");
  return machine;
}

async function chromiumSandboxed(m: Machine): Promise<boolean> {
  const r = await m.exec({
    shell:
      'chromium --headless --disable-gpu --no-first-run --user-data-dir="$(mktemp -d)" --dump-dom "data:text/html,<p>sandboxed</p>" 2>&1',
    timeoutMs: 60_000,
  });
  const out = text(r.stdout);
  return out.includes("<p>sandboxed</p>") && !/No usable sandbox/.test(out);
}

async function describeComputer(label: string, m: Machine): Promise<void> {
  const status = await m.exec({ shell: "grep -E '^Cap(Eff|Bnd)' /proc/self/status | tr '\\t' ' '" });
  const userNs = await m.exec({ shell: "unshare -Ur id -u 2>&1; echo exit=$?" });
  const mount = await m.exec({ shell: "unshare -Urm mount -t tmpfs none /mnt 2>&1; echo exit=$?" });
  const info = await docker.getContainer(m.ref.slice("docker:".length)).inspect();
  const h = info.HostConfig;
  write(`${label}:`);
  write(`  ${text(status.stdout).replace(/\n/g, ", ")}`);
  write(
    `  CapDrop ${JSON.stringify(h.CapDrop ?? [])}, CapAdd ${JSON.stringify(h.CapAdd ?? [])}, CPUs ${(h.NanoCpus ?? 0) / 1e9 || "unlimited"}, memory ${h.Memory ? `${h.Memory / 2 ** 20} MiB` : "unlimited"}, pids ${h.PidsLimit || "unlimited"}`,
  );
  write(
    `  seccomp: unshare -Ur gives ${text(userNs.stdout).replace(/\n/g, " ")}; a mount in it: ${text(mount.stdout).replace(/\n/g, " ")}`,
  );
  write(`  Chromium starts with its sandbox: ${(await chromiumSandboxed(m)) ? "yes" : "NO"}`);
}

try {
  const hardened = await provider.provision({ computerId: "hardening-bench", homeKey: `hardened-${Date.now()}` });
  machines.push(hardened);
  const unhardened = await unhardenedTwin(hardened);
  machines.push(unhardened);
  await describeComputer("hardened (the provider's computer)", hardened);
  await describeComputer("unhardened twin (Docker's default capabilities, no limits)", unhardened);

  let bots = 0;
  const open = async (m: Machine) => (await m.openDesktop?.(`hardening-${bots++}`)) as DesktopSession;
  // The resident service starts with the first desktop call on each; the cold figures are of desktops.
  for (const m of [hardened, unhardened]) await (await open(m)).release();
  const warm = await Promise.all([open(hardened), open(unhardened)]);
  for (const d of warm)
    await (
      d as DesktopSession & { evaluateInPage(e?: string, c?: undefined, o?: { url: string }): Promise<unknown> }
    ).evaluateInPage(undefined, undefined, { url: `data:text/html,<p>${"Hardening bench. ".repeat(300)}</p>` });
  let x = 100;
  const nextX = () => {
    x = (x + 37) % 1200;
    return x;
  };
  await runBench(
    "docker computer: hardened vs Docker's default capabilities and no limits",
    [
      {
        name: "cold desktop start to first frame, then release",
        unit: "ms",
        subject: {
          label: "hardened",
          run: async () => {
            const d = await open(hardened);
            await d.observe();
            await d.release();
          },
        },
        baseline: {
          label: "unhardened",
          run: async () => {
            const d = await open(unhardened);
            await d.observe();
            await d.release();
          },
        },
      },
      {
        name: "observe at 1280x800 (PNG)",
        unit: "ms",
        subject: { label: "hardened", run: () => warm[0]!.observe() },
        baseline: { label: "unhardened", run: () => warm[1]!.observe() },
      },
      {
        name: "one action (pointer move)",
        unit: "ms",
        subject: { label: "hardened", run: () => warm[0]!.act([{ type: "move", x: nextX(), y: 300 }]) },
        baseline: { label: "unhardened", run: () => warm[1]!.act([{ type: "move", x: nextX(), y: 300 }]) },
      },
      {
        name: "exec round trip (true)",
        unit: "ms",
        subject: { label: "hardened", run: () => hardened.exec({ argv: ["true"] }) },
        baseline: { label: "unhardened", run: () => unhardened.exec({ argv: ["true"] }) },
      },
    ],
    { ...options, write },
  );
  for (const d of warm) await d.release();
} finally {
  for (const m of machines) await m.destroy().catch(() => {});
  await rm(dataDir, { recursive: true, force: true }).catch(() => {});
}
