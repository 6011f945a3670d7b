// `npm run bench -- frames [--runs N] [--warmup N]`: what a desktop frame
// costs in each format (issue 48), on the Docker reference provider.
//
// Scenes: a text-heavy desktop (a browser full of text, the page the
// desktop bench looks at) and the six page-browser fixture pages
// (page-fixtures/), each shown in the desktop's own Chromium.
// - The encoder sweep: one frame of each scene encoded in the computer by
//   ImageMagick (the image's encoder for JPEG and WebP) at several
//   qualities and settings, each timed in the computer (the program's
//   whole run, start-up included, as the service pays it), beside our PNG
//   of the same frame. The figures the defaults were picked from.
// - The headline: observe({format: "webp"}) (lossless WebP, the setting
//   the sweep picked) beside observe() as PNG through the resident service,
//   alternating, bytes and time; the target (at most half of PNG's
//   bytes on the text-heavy desktop at no more than PNG's time) is printed
//   as met or MISSED.
// Needs the engine and the image (`npx agent-computer-image build`) and a
// build of core, desktop-runtime and provider-docker.
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession, LinuxObserveOptions } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { benchOptionsFromArgv, median, runBench } from "@agent-computer/testing/bench";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { encoderArguments } from "../computer/desktop/frame-encoding.js";
import { encodePng } from "../computer/desktop/screen-frame.js";

const options = benchOptionsFromArgv();
const write = (line: string) => process.stdout.write(`${line}\n`);
const runs = options.runs ?? 5;

/** One encoder setting of the sweep: ImageMagick's arguments between the PPM in and the image out. */
interface Setting {
  readonly label: string;
  readonly args: string;
  readonly out: "jpeg" | "webp";
}

// One thread, as the service runs ImageMagick (frame-encoding.ts), but for the row that shows why.
const SETTINGS: readonly Setting[] = [
  ...[50, 65, 80].map((q) => ({ label: `JPEG q${q}`, args: `-quality ${q}`, out: "jpeg" as const })),
  ...[50, 80].flatMap((q) =>
    [0, 4].map((m) => ({
      label: `WebP lossy q${q} method ${m}`,
      args: `-quality ${q} -define webp:method=${m}`,
      out: "webp" as const,
    })),
  ),
  { label: "WebP lossless method 0", args: "-define webp:lossless=true -define webp:method=0", out: "webp" },
  {
    label: "WebP lossless method 1, all threads",
    args: "-define webp:lossless=true -define webp:method=1",
    out: "webp",
  },
  { label: "WebP lossless method 1 (the default)", args: encoderArguments("webp", undefined).join(" "), out: "webp" },
];
const THREADS = (s: Setting) => (s.label.endsWith("all threads") ? "" : "MAGICK_THREAD_LIMIT=1 ");

const fixtureDir = join(import.meta.dirname, "page-fixtures");
const FIXTURES = [
  "search-results.html",
  "settings-form.html",
  "data-table.html",
  "long-form.html",
  "site-links.html",
  "spa-inbox.html",
];
const TEXT_HEAVY = `data:text/html,<h1>Desktop bench</h1><p>${"Lorem ipsum dolor sit amet. ".repeat(200)}</p>`;

const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (chosen.missing) throw new Error(`The frames bench cannot run: ${chosen.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-frames-bench-"));
const provider = chosen.provider({ dataDir });
let machine: Machine | undefined;

/** `sh -c script` in the computer by `docker exec`, for the sweep's own timing there. */
function inComputer(m: Machine, script: string): string {
  const r = spawnSync("docker", ["exec", m.ref.slice("docker:".length), "sh", "-c", script], {
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`docker exec failed: ${r.stderr}`);
  return r.stdout;
}

/** Observes until two frames in a row are equal: the page has drawn. */
async function settled(desktop: LinuxDesktopSession): Promise<void> {
  let last = "";
  for (let i = 0; i < 100; i++) {
    const { frameHash } = await desktop.observe(undefined, { includeImage: false });
    if (frameHash === last) return;
    last = frameHash;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("The desktop never stopped changing: no frame to measure.");
}

const imageBytes = async (desktop: LinuxDesktopSession, opts: LinuxObserveOptions) => {
  const bytes = (await desktop.observe(undefined, opts)).image?.length ?? 0;
  if (bytes === 0) throw new Error(`observe(${JSON.stringify(opts)}) answered no image`);
  return bytes;
};

const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
const targets: string[] = [];

try {
  machine = await provider.provision({ computerId: "frames-bench", homeKey: `frames-bench-${Date.now()}` });
  const m = machine;
  const desktop = (await m.openDesktop?.("frames-bench")) as LinuxDesktopSession;
  for (const file of FIXTURES) await m.files.write(`frames-bench/${file}`, await readFile(join(fixtureDir, file)));
  const scenes = [
    { name: "text-heavy desktop", url: TEXT_HEAVY },
    ...FIXTURES.map((file) => ({ name: file, url: `file://${m.workspacePath}/frames-bench/${file}` })),
  ];
  const cheap: LinuxObserveOptions = { format: "webp" };
  for (const scene of scenes) {
    await desktop.evaluateInPage(undefined, undefined, { url: scene.url });
    await settled(desktop);
    await sweep(m, desktop, scene.name);
    const bytes = { png: [] as number[], webp: [] as number[] };
    const [figure] = await runBench(
      `frames: ${scene.name}`,
      [
        {
          name: "observe at 1280x800 as WebP (lossless) vs PNG, through the resident service",
          unit: "ms",
          subject: {
            label: 'observe({format: "webp"})',
            run: async () => bytes.webp.push(await imageBytes(desktop, cheap)),
          },
          baseline: { label: "observe() PNG", run: async () => bytes.png.push(await imageBytes(desktop, {})) },
        },
      ],
      { ...options, write },
    );
    const share = median(bytes.webp) / median(bytes.png);
    write(
      `  bytes (median): WebP ${kb(median(bytes.webp))} | PNG ${kb(median(bytes.png))} | ratio ${share.toFixed(3)}`,
    );
    if (scene.name === "text-heavy desktop" && figure) {
      const time = figure.ratio;
      targets.push(
        `text-heavy desktop: WebP at ${share.toFixed(3)} of PNG's bytes (target ≤ 0.5: ${share <= 0.5 ? "met" : "MISSED"}), ${time.toFixed(3)} of its time (target ≤ 1: ${time <= 1 ? "met" : "MISSED"})`,
      );
    } else
      targets.push(
        `${scene.name}: WebP at ${share.toFixed(3)} of PNG's bytes, ${figure?.ratio.toFixed(3)} of its time`,
      );
  }
  write("# frames: issue 48 targets");
  for (const line of targets) write(`  ${line}`);
} finally {
  await machine?.destroy().catch(() => {});
  await rm(dataDir, { recursive: true, force: true }).catch(() => {});
}

/**
 * Encodes the scene's frame (our PNG of it, turned into a PPM in the
 * computer) with each setting, `runs` times, timing each run in the
 * computer; prints bytes and median time beside our PNG's.
 */
async function sweep(m: Machine, desktop: LinuxDesktopSession, scene: string): Promise<void> {
  const png = (await desktop.observe()).image as Uint8Array;
  await m.files.write("frames-bench/frame.png", png);
  const dir = `${m.workspacePath}/frames-bench`;
  inComputer(m, `convert png:${dir}/frame.png ppm:${dir}/frame.ppm`);
  const timed = (command: string) =>
    inComputer(
      m,
      `for i in $(seq ${runs}); do s=$(date +%s%N); ${command} > ${dir}/out; e=$(date +%s%N); echo $(( (e - s) / 1000 )) $(stat -c %s ${dir}/out); done`,
    )
      .trim()
      .split("\n")
      .map((line) => line.split(" ").map(Number) as [number, number]);
  const row = (label: string, samples: [number, number][]) => {
    const ms = median(samples.map(([us]) => us / 1000));
    const bytes = median(samples.map(([, b]) => b));
    if (!(bytes > 0)) throw new Error(`${scene}: ${label} wrote no image`);
    return { label, ms, bytes };
  };
  const rows = SETTINGS.map((s) =>
    row(s.label, timed(`${THREADS(s)}convert ppm:${dir}/frame.ppm ${s.args} ${s.out}:-`)),
  );
  write(
    `# frames: ${scene}: one frame encoded in the computer (ImageMagick, start-up included; ${runs} runs, medians)`,
  );
  const pngMs = pngEncoderMs(await m.files.read("frames-bench/frame.ppm"));
  write(`  our PNG (the service's encoder, timed in Node on this host): ${kb(png.length)} ${pngMs.toFixed(0)} ms`);
  for (const r of rows) {
    write(
      `  ${r.label.padEnd(38)} ${kb(r.bytes).padStart(7)} (${(r.bytes / png.length).toFixed(2)} of PNG) ${r.ms.toFixed(0)} ms`,
    );
  }
}

/** Our PNG encoder's median time on the frame (a binary PPM, as ImageMagick writes it). */
function pngEncoderMs(ppm: Uint8Array): number {
  const bytes = Buffer.from(ppm);
  const [magic, width, height, max] = bytes.subarray(0, 40).toString("latin1").split(/\s+/);
  if (magic !== "P6" || max !== "255") throw new Error("The frame is not an 8-bit binary PPM.");
  const rgb = bytes.subarray(bytes.length - Number(width) * Number(height) * 3);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    encodePng({ width: Number(width), height: Number(height), rgb });
    times.push(performance.now() - started);
  }
  return median(times);
}
