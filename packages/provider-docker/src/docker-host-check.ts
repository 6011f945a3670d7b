import type Docker from "dockerode";

/** What `checkDockerHost` found: the engine client and image to run computers with, or why they cannot run. */
export interface DockerHostCheck {
  readonly docker: Docker;
  /** The computer image that was looked for. */
  readonly image: string;
  /** Why Docker computers cannot start on this host, with what fixes it; absent when they can. */
  readonly missing?: string;
}
