import type { ImageBuildStage } from "./image-build-stage.js";

/** One report from `buildComputerImage`, for a progress display or a log. */
export interface ImageBuildProgress {
  readonly stage: ImageBuildStage;
  /** `started`/`done` bracket a stage; `progress` is a line inside it; `skipped` means there was nothing to do. */
  readonly status: "started" | "progress" | "done" | "skipped";
  readonly message: string;
  /** Milliseconds since the build call began. */
  readonly elapsedMs: number;
}
