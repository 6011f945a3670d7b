import { Writable } from "node:stream";
import type { Logger } from "@agent-computer/core";
import { denialLineReader, type EgressDenial } from "@agent-computer/egress";
import { type KubeConfig, Log } from "@kubernetes/client-node";
import { EGRESS_CONTAINER_NAME } from "./egress-fence-manifest.js";

/**
 * Follows the denials of fenced pods' egress containers: each refusal is a
 * JSON line on the proxy's stdout (@agent-computer/egress, proxy-main.ts),
 * read here through `GET pods/{name}/log?follow=true` (the Role needs `get`
 * on `pods/log`) and handed to `onDenied`. One stream per pod, ended with
 * the pod.
 */
export class EgressDenialFollower {
  private readonly following = new Set<string>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly namespace: string,
    private readonly onDenied: (denial: EgressDenial) => void,
  ) {}

  /**
   * Follows `pod`'s egress container from `since` (the pod's start when
   * undefined: a new pod's every line is new), unless it is followed
   * already. A stream that cannot be opened (a Role without `pods/log`) is
   * a warning on `logger`, never a failed provision.
   */
  follow(pod: string, logger: Logger, since?: Date): void {
    if (this.following.has(pod)) return;
    this.following.add(pod);
    // EgressDenialListeners: a listener's failure stays its own.
    const readDenials = denialLineReader(this.onDenied);
    const lines = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        readDenials(chunk.toString("utf8"));
        done();
      },
    });
    const stop = () => this.following.delete(pod);
    lines.on("finish", stop);
    lines.on("error", stop);
    new Log(this.kubeConfig)
      .log(this.namespace, pod, EGRESS_CONTAINER_NAME, lines, {
        follow: true,
        ...(since ? { sinceTime: since.toISOString() } : {}),
      })
      .catch((error: Error) => {
        stop();
        logger.warn("could not follow the egress denials of a computer pod", { pod, error: error.message });
      });
  }
}
