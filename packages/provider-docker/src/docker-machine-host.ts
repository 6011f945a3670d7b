import type Docker from "dockerode";

/** What a Docker machine needs from its provider. */
export interface DockerMachineHost {
  readonly docker: Docker;
  /** The user commands run as inside the machine ("1000:1000"). */
  readonly user: string;
  readonly stopTimeoutSeconds: number;
}
