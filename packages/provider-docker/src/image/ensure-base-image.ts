import { spawn } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import type Docker from "dockerode";
import { debianMirrorOfThisMachine } from "./debian-mirror.js";
import { followEngineProgress } from "./follow-engine-progress.js";

/** The image the Dockerfile starts FROM. */
export const BASE_IMAGE = "debian:bookworm-slim";

const PULL_TIMEOUT_MS = 60_000;

/**
 * Makes sure the engine has the base image: present, else pulled, else
 * made from Debian's packages with debootstrap (machines without a
 * reachable registry). Needs root and debootstrap only in that last case.
 */
export async function ensureBaseImage(
  docker: Docker,
  options: { mirror?: string; signal?: AbortSignal; report: (line: string) => void },
): Promise<"present" | "pulled" | "made"> {
  const present = await docker
    .getImage(BASE_IMAGE)
    .inspect()
    .then(
      () => true,
      (error: { statusCode?: number }) => {
        if (error.statusCode === 404) return false;
        throw error;
      },
    );
  if (present) return "present";

  options.report(`pulling ${BASE_IMAGE}`);
  const pullSignal = AbortSignal.any([
    AbortSignal.timeout(PULL_TIMEOUT_MS),
    ...(options.signal ? [options.signal] : []),
  ]);
  try {
    const stream = await docker.pull(BASE_IMAGE, { abortSignal: pullSignal });
    await followEngineProgress(docker, stream, () => {});
    return "pulled";
  } catch (error) {
    if (options.signal?.aborted) throw error;
    options.report(
      `no registry answered (${(error as Error).message.split("\n")[0]}); making ${BASE_IMAGE} with debootstrap`,
    );
  }

  const mirror = options.mirror ?? (await debianMirrorOfThisMachine());
  if (!mirror) {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `${BASE_IMAGE} is missing, no registry answered, and no Debian mirror was found in this machine's apt sources; pass debianMirror or load the image by hand.`,
    );
  }
  if (process.getuid?.() !== 0) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      `${BASE_IMAGE} is missing and no registry answered; making it with debootstrap needs root. Run the image command as root once, or load ${BASE_IMAGE} yourself.`,
    );
  }
  const rootfs = await mkdtemp(join(tmpdir(), "agent-computer-rootfs-"));
  try {
    await run(["debootstrap", "--variant=minbase", "bookworm", rootfs, mirror], options);
    // The image's apt gets this machine's sources (security updates included),
    // as the published slim image carries its own.
    await copyFile("/etc/apt/sources.list.d/debian.sources", join(rootfs, "etc/apt/sources.list.d/debian.sources"))
      .then(() => rm(join(rootfs, "etc/apt/sources.list"), { force: true }))
      .catch(() => {});
    options.report(`importing the root file system as ${BASE_IMAGE}`);
    const tar = spawn("tar", ["-C", rootfs, "-c", "."], { stdio: ["ignore", "pipe", "pipe"] });
    const imported = await docker.importImage(tar.stdout, { repo: "debian", tag: "bookworm-slim" });
    await followEngineProgress(docker, imported, () => {});
    return "made";
  } finally {
    await rm(rootfs, { recursive: true, force: true });
  }
}

function run(argv: string[], options: { signal?: AbortSignal; report: (line: string) => void }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      stdio: ["ignore", "pipe", "pipe"],
      signal: options.signal,
    });
    let tail = "";
    const onData = (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      tail = (tail + text).slice(-2000);
      for (const line of text.split("\n"))
        if (line.startsWith("I: Retrieving") || line.startsWith("I: Base")) options.report(line);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "ENOENT"
          ? new AgentComputerError(
              "UNSUPPORTED",
              `${argv[0]} is not installed; install it (apt-get install ${argv[0]}) to make ${BASE_IMAGE}.`,
            )
          : error,
      ),
    );
    child.on("close", (code) =>
      code === 0
        ? resolve()
        : reject(
            new AgentComputerError(
              "UNAVAILABLE",
              `${argv[0]} failed with exit code ${code}: ${tail.trim().split("\n").slice(-5).join(" | ")}`,
            ),
          ),
    );
  });
}
