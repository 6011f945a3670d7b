// `npm run bench -- desktop [--runs N]`: the shared Linux desktop runtime on
// the reference provider (Docker), each figure beside the same X work done
// by raw `docker exec` in the same run: cold start to first frame, observe
// at 1280x800 (latency and PNG bytes), one action, a batch of 10 against 10
// single calls, and PSS per idle desktop at 1, 2, 4, 8 (16) desktops.
// Needs the engine and the image (`npx agent-computer-image build`) and a
// build of core, desktop-runtime and provider-docker (it passes
// provider-docker's build to the shared test helper as the provider to
// drive: desktop-runtime itself never depends on a provider).
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { freemem, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type BenchCase, benchOptionsFromArgv, median, runBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";

const options = benchOptionsFromArgv();
// Docker: the baseline is the same X work by raw `docker exec`.
const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (chosen.missing) throw new Error(`The desktop bench cannot run: ${chosen.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-desktop-bench-"));
const provider = chosen.provider({ dataDir });
const machines: Machine[] = [];
const write = (line: string) => process.stdout.write(`${line}\n`);

function dockerExec(id: string, script: string): { stdout: Buffer; ms: number } {
  const started = performance.now();
  const r = spawnSync("docker", ["exec", id, "sh", "-c", script], { maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`docker exec failed: ${r.stderr.toString()}`);
  return { stdout: r.stdout, ms: performance.now() - started };
}

const idOf = (m: Machine) => m.ref.slice("docker:".length);
let bots = 0;
const freshBot = () => `bench-${process.pid}-${bots++}`;

try {
  const machine = await provider.provision({ computerId: "desktop-bench", homeKey: `desktop-bench-${Date.now()}` });
  machines.push(machine);
  const id = idOf(machine);
  const open = async (bot: string) => (await machine.openDesktop?.(bot)) as LinuxDesktopSession;

  // Cold start: what a bot's first graphical call costs, release excluded
  // from the figure (measured inside each run) but done in the run.
  const coldOurs: number[] = [];
  const coldRaw: number[] = [];
  // The same processes by hand on display :150: Xvfb, openbox, Chromium on a
  // fresh profile, wait for DevTools and the window, one `import` screenshot.
  const rawStart = (_run: number) => `
    set -e; d=:150; p=$HOME/.bench-raw-$n; rm -rf $p
    Xvfb $d -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 & x=$!
    until xdpyinfo -display $d >/dev/null 2>&1; do sleep 0.05; done
    DISPLAY=$d openbox >/dev/null 2>&1 & w=$!
    DISPLAY=$d CDP_PORT=9299 agent-computer-chromium $p --start-maximized about:blank >/dev/null 2>&1 & c=$!
    until curl -fs http://127.0.0.1:9299/json/list | grep -q '"page"' && DISPLAY=$d xdotool search --onlyvisible --classname chromium >/dev/null 2>&1; do sleep 0.1; done
    DISPLAY=$d import -window root png:- | wc -c >/dev/null
    echo "first-frame"
    kill $c; while kill -0 $c 2>/dev/null; do sleep 0.05; done; kill $w $x; wait $x 2>/dev/null || true; rm -rf $p`;
  let rawRuns = 0;
  const cases: BenchCase[] = [
    {
      name: "cold desktop start to first frame, then release",
      unit: "ms",
      subject: {
        label: "openDesktop+observe+release",
        run: async () => {
          const t0 = performance.now();
          const desktop = await open(freshBot());
          await desktop.observe();
          coldOurs.push(performance.now() - t0);
          await desktop.release();
        },
      },
      baseline: {
        label: "raw docker exec Xvfb+openbox+chromium+import",
        run: () => {
          const t0 = performance.now();
          dockerExec(id, rawStart(rawRuns++));
          coldRaw.push(performance.now() - t0);
        },
      },
    },
  ];
  await runBench("desktop: cold start", cases, { ...options, write });
  write(
    `  start to first frame alone: ours ${median(coldOurs).toFixed(0)} ms | raw ${median(coldRaw).toFixed(0)} ms (raw includes its teardown)`,
  );

  // A warm desktop showing a page of text, for the looks and actions.
  const desktop = await open("bench-warm");
  await desktop.evaluateInPage(undefined, undefined, {
    url: `data:text/html,<h1>Desktop bench</h1><p>${"Lorem ipsum dolor sit amet. ".repeat(200)}</p>`,
  });
  const display = desktop.display;
  const pngBytes = { ours: [] as number[], raw: [] as number[] };
  let x = 100;
  const nextX = () => {
    x = (x + 37) % 1200;
    return x;
  };
  const warm: BenchCase[] = [
    {
      name: "observe at 1280x800 (PNG)",
      unit: "ms",
      subject: {
        label: "desktop.observe()",
        run: async () => pngBytes.ours.push((await desktop.observe()).image?.length ?? 0),
      },
      baseline: {
        label: "docker exec import -window root png:-",
        run: () => pngBytes.raw.push(dockerExec(id, `DISPLAY=${display} import -window root png:-`).stdout.length),
      },
    },
    {
      name: "one action (pointer move)",
      unit: "ms",
      subject: {
        label: "desktop.act([move])",
        run: () => desktop.act([{ type: "move", x: nextX(), y: 300 }]),
      },
      baseline: {
        label: "docker exec xdotool mousemove",
        run: () => dockerExec(id, `DISPLAY=${display} xdotool mousemove ${nextX()} 300`),
      },
    },
    {
      name: "10 actions: one batch vs 10 calls",
      unit: "ms",
      subject: {
        label: "act([10 moves])",
        run: () =>
          desktop.act(Array.from({ length: 10 }, (_, i) => ({ type: "move" as const, x: 50 + i * 40, y: 400 }))),
      },
      baseline: {
        label: "10 x act([move])",
        run: async () => {
          for (let i = 0; i < 10; i++) await desktop.act([{ type: "move", x: 60 + i * 40, y: 420 }]);
        },
      },
    },
  ];
  await runBench("desktop: observe and act (warm)", warm, { ...options, write });
  write(
    `  PNG bytes at 1280x800 (median): ours ${median(pngBytes.ours).toFixed(0)} | ImageMagick import ${median(pngBytes.raw).toFixed(0)}`,
  );
  await desktop.release();

  // Memory: PSS summed over each desktop's processes (X server, window
  // manager, Chromium and all its children), idle, at growing counts.
  write("# desktop: PSS per idle desktop (summed over its processes)");
  const pssScript = `python3 - <<'PY'
import glob, json, os
def children():
    kids = {}
    for stat in glob.glob('/proc/[0-9]*/stat'):
        try:
            s = open(stat).read(); pid = int(stat.split('/')[2]); ppid = int(s[s.rindex(')') + 2:].split()[1])
            kids.setdefault(ppid, []).append(pid)
        except Exception: pass
    return kids
def pss(pid):
    try:
        for line in open('/proc/%d/smaps_rollup' % pid):
            if line.startswith('Pss:'): return int(line.split()[1])
    except Exception: return 0
    return 0
kids = children(); total = 0; n = 0
for f in glob.glob('/tmp/agent-computer-desktops/slot-*.json'):
    r = json.load(open(f)); n += 1
    todo = [r[k]['pid'] for k in ('xserver', 'windowManager', 'browser') if r.get(k)]
    while todo:
        p = todo.pop(); total += pss(p); todo.extend(kids.get(p, []))
print(json.dumps({'desktops': n, 'pssKb': total}))
PY`;
  const memory = await provider.provision({
    computerId: "desktop-bench-memory",
    homeKey: `desktop-bench-mem-${Date.now()}`,
  });
  machines.push(memory);
  let running = 0;
  let perDesktopMb = 0;
  for (const target of [1, 2, 4, 8, 16]) {
    let slowest = 0;
    while (running < target) {
      const t0 = performance.now();
      const d = (await memory.openDesktop?.(freshBot())) as LinuxDesktopSession;
      await d.observe(undefined, { includeImage: false });
      slowest = Math.max(slowest, performance.now() - t0);
      running++;
    }
    await new Promise((r) => setTimeout(r, 3000)); // let start-up work settle: idle means idle
    const sample = JSON.parse(dockerExec(idOf(memory), pssScript).stdout.toString()) as {
      desktops: number;
      pssKb: number;
    };
    perDesktopMb = sample.pssKb / 1024 / sample.desktops;
    write(
      `${sample.desktops} desktops: PSS ${(sample.pssKb / 1024).toFixed(0)} MB total, ${perDesktopMb.toFixed(0)} MB per desktop (slowest start ${slowest.toFixed(0)} ms, host free ${(freemem() / 2 ** 30).toFixed(1)} GiB)`,
    );
    if (slowest > 30_000) {
      write("  a start took over 30 s: stopping here");
      break;
    }
  }
  const ceiling = Math.floor(totalmem() / 2 ** 20 / perDesktopMb);
  write(
    `RAM ceiling: ${(totalmem() / 2 ** 30).toFixed(1)} GiB / ${perDesktopMb.toFixed(0)} MB per idle desktop = about ${ceiling} idle desktops on this host (before the engine's and the OS's own use)`,
  );
} finally {
  for (const m of machines) await m.destroy().catch(() => {});
  await rm(dataDir, { recursive: true, force: true }).catch(() => {});
}
