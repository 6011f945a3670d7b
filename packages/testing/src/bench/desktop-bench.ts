// The desktop bench (`npm run bench -- desktop`), shared by every provider
// that runs the Linux desktop runtime: Docker (desktop-runtime's bench) and
// the Kubernetes wire fixture (provider-kubernetes's). Each figure stands
// beside the same X work done by the engine's own exec in the same run:
// cold start to first frame, observe at 1280x800 (PNG, and JPEG q80 and lossless WebP
// sizes), one action, a batch of 10 against one action, the resident
// service against the exec path, and PSS per idle desktop and of the
// service itself.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { freemem, totalmem } from "node:os";
import type { DesktopSession, Machine } from "@agent-computer/core";
import type { BenchCase } from "./bench-case.js";
import { type BenchOptions, median, runBench } from "./run-bench.js";

/** What the bench needs from a provider. */
export interface DesktopBenchTarget {
  /** "docker", "kubernetes (wire fixture)". */
  readonly name: string;
  provision(role: string): Promise<Machine>;
  /** Runs `sh -c script` in the machine by the engine's own exec (`docker exec`): the baseline. */
  rawExec(machine: Machine, script: string): { stdout: Buffer; ms: number };
  /** The same bot's desktop driven by exec per call (the transport before the resident service). */
  openExecDesktop(machine: Machine, bot: string): Promise<DesktopSession>;
  /**
   * The host's pid of the machine's resident service (the gateway): its
   * PSS is read from this host, since in the computer it is non-dumpable
   * and neither the computer's user nor its capability-less root may read it.
   */
  servicePid(machine: Machine): number | undefined;
}

/** The host pid of the resident service in a container of this host's Docker engine (`docker top`). */
export function gatewayPidOfContainer(containerId: string): number | undefined {
  const top = spawnSync("docker", ["top", containerId, "-eo", "pid,args"], { encoding: "utf8" });
  const line = top.stdout?.split("\n").find((l) => /desktop\.mjs gateway\s*$/.test(l));
  const pid = Number(line?.trim().split(/\s+/)[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** PSS of a host process in KiB, from /proc/<pid>/smaps_rollup; a figure it cannot read fails the bench, never prints 0. */
function hostPssKb(pid: number | undefined): number {
  if (pid === undefined)
    throw new Error("The desktop bench found no resident service (desktop.mjs gateway) to measure");
  const line = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("Pss:"));
  const kb = Number(line?.split(/\s+/)[1]);
  if (!(kb > 0)) throw new Error(`The desktop bench read no PSS for the resident service (pid ${pid})`);
  return kb;
}

/** What a Linux desktop's observe takes beyond the contract (LinuxObserveOptions). */
type ObserveOptions = { includeImage?: boolean; format?: "png" | "jpeg" | "webp"; quality?: number };
type Observing = DesktopSession & {
  observe(ctx?: undefined, opts?: ObserveOptions): ReturnType<DesktopSession["observe"]>;
  evaluateInPage(expression: string | undefined, ctx?: undefined, opts?: { url?: string }): Promise<unknown>;
  display: string;
};

// PSS summed over each desktop's processes (X server, window manager,
// Chromium and all its children), read in the computer.
const PSS_SCRIPT = `python3 - <<'PY'
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

export async function runDesktopBench(target: DesktopBenchTarget, options: BenchOptions = {}): Promise<void> {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const machines: Machine[] = [];
  let bots = 0;
  const freshBot = () => `bench-${process.pid}-${bots++}`;
  try {
    const machine = await target.provision("desktop-bench");
    machines.push(machine);
    const open = async (bot: string) => (await machine.openDesktop?.(bot)) as Observing;
    // The service starts with the first desktop call; the cold figures are of desktops, not of it.
    await (await open(freshBot())).release();

    const coldOurs: number[] = [];
    const coldRaw: number[] = [];
    // The same processes by hand on display :150: Xvfb, openbox, Chromium on a
    // fresh profile, wait for DevTools and the window, one `import` screenshot.
    const rawStart = `
      set -e; d=:150; p=$HOME/.bench-raw; rm -rf $p
      Xvfb $d -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 & x=$!
      until xdpyinfo -display $d >/dev/null 2>&1; do sleep 0.05; done
      DISPLAY=$d openbox >/dev/null 2>&1 & w=$!
      DISPLAY=$d CDP_PORT=9299 agent-computer-chromium $p --start-maximized about:blank >/dev/null 2>&1 & c=$!
      until curl -fs http://127.0.0.1:9299/json/list | grep -q '"page"' && DISPLAY=$d xdotool search --onlyvisible --classname chromium >/dev/null 2>&1; do sleep 0.1; done
      DISPLAY=$d import -window root png:- | wc -c >/dev/null
      echo "first-frame"
      kill $c; while kill -0 $c 2>/dev/null; do sleep 0.05; done; kill $w $x; wait $x 2>/dev/null || true; rm -rf $p`;
    await runBench(
      `desktop on ${target.name}: cold start`,
      [
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
            label: "raw exec Xvfb+openbox+chromium+import",
            run: () => {
              const t0 = performance.now();
              target.rawExec(machine, rawStart);
              coldRaw.push(performance.now() - t0);
            },
          },
        },
      ],
      { ...options, write },
    );
    write(
      `  start to first frame alone: ours ${median(coldOurs).toFixed(0)} ms | raw ${median(coldRaw).toFixed(0)} ms (raw includes its teardown)`,
    );

    // A warm desktop showing a page of text, for the looks and actions.
    const desktop = await open("bench-warm");
    await desktop.evaluateInPage(undefined, undefined, {
      url: `data:text/html,<h1>Desktop bench</h1><p>${"Lorem ipsum dolor sit amet. ".repeat(200)}</p>`,
    });
    const viaExec = (await target.openExecDesktop(machine, "bench-warm")) as Observing;
    const display = desktop.display;
    const bytes = { png: [] as number[], raw: [] as number[], jpeg: [] as number[], webp: [] as number[] };
    let x = 100;
    const nextX = () => {
      x = (x + 37) % 1200;
      return x;
    };
    const imageBytes = async (format: "png" | "jpeg" | "webp") =>
      (await desktop.observe(undefined, { format })).image?.length ?? 0;
    const warm: BenchCase[] = [
      {
        name: "observe at 1280x800 (PNG), service vs raw exec import",
        unit: "ms",
        subject: { label: "desktop.observe()", run: async () => bytes.png.push(await imageBytes("png")) },
        baseline: {
          label: "exec import -window root png:-",
          run: () =>
            bytes.raw.push(target.rawExec(machine, `DISPLAY=${display} import -window root png:-`).stdout.length),
        },
      },
      {
        name: "observe at 1280x800 (PNG), service vs exec transport",
        unit: "ms",
        subject: { label: "desktop.observe() (service)", run: () => desktop.observe() },
        baseline: { label: "desktop.observe() (exec per call)", run: () => viaExec.observe() },
      },
      {
        name: "observe at 1280x800, JPEG q80 vs PNG (service)",
        unit: "ms",
        subject: { label: "observe({format: jpeg})", run: async () => bytes.jpeg.push(await imageBytes("jpeg")) },
        baseline: { label: "observe() PNG", run: () => desktop.observe() },
      },
      {
        name: "one action (pointer move), service vs raw exec xdotool",
        unit: "ms",
        subject: { label: "desktop.act([move])", run: () => desktop.act([{ type: "move", x: nextX(), y: 300 }]) },
        baseline: {
          label: "exec xdotool mousemove",
          run: () => target.rawExec(machine, `DISPLAY=${display} xdotool mousemove ${nextX()} 300`),
        },
      },
      {
        name: "10 actions in one batch vs one action (service)",
        unit: "ms",
        subject: {
          label: "act([10 moves])",
          run: () =>
            desktop.act(Array.from({ length: 10 }, (_, i) => ({ type: "move" as const, x: 50 + i * 40, y: 400 }))),
        },
        baseline: { label: "act([1 move])", run: () => desktop.act([{ type: "move", x: nextX(), y: 420 }]) },
      },
    ];
    await runBench(`desktop on ${target.name}: observe and act (warm)`, warm, { ...options, write });
    bytes.webp.push(await imageBytes("webp"));
    write(
      `  image bytes at 1280x800 (median): PNG ${median(bytes.png).toFixed(0)} | ImageMagick import PNG ${median(bytes.raw).toFixed(0)} | JPEG q80 ${median(bytes.jpeg).toFixed(0)} | WebP (lossless) ${median(bytes.webp).toFixed(0)}`,
    );
    await desktop.release();

    write(`# desktop on ${target.name}: PSS per idle desktop (summed over its processes) and of the resident service`);
    const memory = await target.provision("desktop-bench-memory");
    machines.push(memory);
    let running = 0;
    let perDesktopMb = 0;
    for (const count of [0, 1, 2, 4, 8, 16]) {
      let slowest = 0;
      while (running < count) {
        const t0 = performance.now();
        const d = (await memory.openDesktop?.(freshBot())) as Observing;
        await d.observe(undefined, { includeImage: false });
        slowest = Math.max(slowest, performance.now() - t0);
        running++;
      }
      if (count === 0) {
        // An idle computer with the service running and no desktop: one opened and released starts it.
        const probe = (await memory.openDesktop?.(freshBot())) as Observing;
        await probe.release();
      }
      await new Promise((r) => setTimeout(r, 3000)); // let start-up work settle: idle means idle
      const sample = JSON.parse(target.rawExec(memory, PSS_SCRIPT).stdout.toString()) as {
        desktops: number;
        pssKb: number;
      };
      const serviceMb = (hostPssKb(target.servicePid(memory)) / 1024).toFixed(1);
      // Desktops that run where the script looks, or the figures below measure nothing.
      if (count > 0 && (sample.desktops < count || !(sample.pssKb > 0))) {
        throw new Error(
          `The desktop bench found ${sample.desktops} desktops (${sample.pssKb} KiB) where ${count} run: it reads the wrong container`,
        );
      }
      if (count === 0) {
        write(`0 desktops: the resident service's PSS ${serviceMb} MB (idle computer)`);
        continue;
      }
      perDesktopMb = sample.pssKb / 1024 / sample.desktops;
      write(
        `${sample.desktops} desktops: PSS ${(sample.pssKb / 1024).toFixed(0)} MB total, ${perDesktopMb.toFixed(0)} MB per desktop, service ${serviceMb} MB (slowest start ${slowest.toFixed(0)} ms, host free ${(freemem() / 2 ** 30).toFixed(1)} GiB)`,
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
  }
}
