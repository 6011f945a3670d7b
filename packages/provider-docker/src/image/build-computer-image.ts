import { performance } from "node:perf_hooks";
import { AgentComputerError } from "@agent-computer/core";
import { computerImageDir, computerImageFiles, computerImageRef } from "@agent-computer/desktop-runtime";
import Docker from "dockerode";
import type { BuildComputerImageOptions } from "./build-computer-image-options.js";
import type { BuildComputerImageResult } from "./build-computer-image-result.js";
import { ensureBaseImage } from "./ensure-base-image.js";
import { followEngineProgress } from "./follow-engine-progress.js";
import type { ImageBuildProgress } from "./image-build-progress.js";
import type { ImageBuildStage } from "./image-build-stage.js";

/**
 * Builds the computer image unless the engine already has one with the exact
 * tag. Reports each stage through `onProgress`; writes nothing itself.
 */
export async function buildComputerImage(options: BuildComputerImageOptions = {}): Promise<BuildComputerImageResult> {
  const started = performance.now();
  const docker = options.docker ?? new Docker();
  const image = options.image ?? (await computerImageRef({ extras: options.extras }));
  const report = (stage: ImageBuildStage, status: ImageBuildProgress["status"], message: string) =>
    options.onProgress?.({ stage, status, message, elapsedMs: Math.round(performance.now() - started) });
  const finish = (built: boolean, baseImage: BuildComputerImageResult["baseImage"]): BuildComputerImageResult => {
    const result = { image, built, baseImage, durationMs: Math.round(performance.now() - started) };
    report("done", "done", built ? `built ${image}` : `${image} already present`);
    return result;
  };

  report("engine", "started", "asking the Docker engine for its version");
  const version = await docker.version().catch((error: Error) => {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The Docker engine does not answer (${error.message}); start dockerd or set DOCKER_HOST.`,
      { cause: error },
    );
  });
  report("engine", "done", `engine ${version.Version} (API ${version.ApiVersion})`);

  report("cache", "started", `looking for ${image}`);
  const present = await imageExists(docker, image);
  if (present && !options.force) {
    report("cache", "done", `${image} is present; nothing to build`);
    report("base-image", "skipped", "not needed");
    report("build", "skipped", "not needed");
    return finish(false, "present");
  }
  report("cache", "done", present ? `${image} is present but a rebuild was asked for` : `${image} is not built yet`);

  report("base-image", "started", "checking for debian:bookworm-slim");
  const baseImage = await ensureBaseImage(docker, {
    mirror: options.debianMirror,
    signal: options.signal,
    report: (line) => report("base-image", "progress", line),
  });
  report("base-image", "done", `debian:bookworm-slim ${baseImage}`);

  report("build", "started", `building ${image}`);
  const buildArgs: Record<string, string> = {
    INSTALL_BRAVE: options.extras?.brave ? "1" : "0",
    INSTALL_UV: options.extras?.uv ? "1" : "0",
  };
  if (options.extras?.uvVersion) buildArgs.UV_VERSION = options.extras.uvVersion;
  const stream = await docker.buildImage(
    { context: computerImageDir(), src: await computerImageFiles() },
    {
      t: image,
      networkmode: options.network ?? "host",
      buildargs: buildArgs,
      rm: true,
      forcerm: true,
      abortSignal: options.signal,
    },
  );
  const tail: string[] = [];
  try {
    await followEngineProgress(docker, stream, (message) => {
      const text = message.stream?.trim();
      if (!text) return;
      tail.push(text);
      if (tail.length > 20) tail.shift();
      // Step lines are the stages of the Dockerfile; the rest is apt noise.
      if (/^Step \d+\/\d+ :/.test(text)) report("build", "progress", oneLine(text));
    });
  } catch (error) {
    if (options.signal?.aborted)
      throw new AgentComputerError("ABORTED", "The image build was aborted.", { cause: error });
    throw new AgentComputerError(
      "UNAVAILABLE",
      `Building ${image} failed: ${(error as Error).message}\nLast build output:\n${tail.join("\n")}`,
      { cause: error, retryable: false },
    );
  }
  report("build", "done", `built ${image}`);
  return finish(true, baseImage);
}

async function imageExists(docker: Docker, image: string): Promise<boolean> {
  return docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      (error: { statusCode?: number; message?: string }) => {
        if (error.statusCode === 404) return false;
        throw new AgentComputerError("UNAVAILABLE", `Could not inspect ${image}: ${error.message}`, { cause: error });
      },
    );
}

/** A Dockerfile step as one short line: long RUN commands would swamp a progress display. */
function oneLine(step: string): string {
  const flat = step.replace(/\s+/g, " ");
  return flat.length > 110 ? `${flat.slice(0, 107)}...` : flat;
}
