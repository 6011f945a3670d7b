import type { ComputerImageExtras } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import type { ImageBuildProgress } from "./image-build-progress.js";

export interface BuildComputerImageOptions {
  /** The engine (default: dockerode's defaults, i.e. DOCKER_HOST or /var/run/docker.sock). */
  docker?: Docker;
  /** The image to build (default: `computerImageRef({ extras })`, which honours AGENT_COMPUTER_IMAGE[_TAG]). */
  image?: string;
  /** Opt-in parts from outside Debian. */
  extras?: ComputerImageExtras;
  /** Build even when an image with the exact tag exists. */
  force?: boolean;
  /**
   * The build's network mode (default "host": on engines started with
   * iptables off, bridge networking has no route out for apt-get).
   */
  network?: string;
  /**
   * The Debian mirror for debootstrap when the base image must be made
   * (default: the first URI of this machine's apt sources).
   */
  debianMirror?: string;
  /** Receives each stage and build line. */
  onProgress?: (progress: ImageBuildProgress) => void;
  /** Cancels the build (the engine stops it when the connection closes). */
  signal?: AbortSignal;
}
