import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { WebSocket } from "ws";
import type { Json } from "./fixture-json.js";

/** Engine output held for a slow exec reader before the engine's stream pauses. */
const OUTPUT_IN_FLIGHT = 4 * 1024 * 1024;
/** How long output must stay quiet after the command's exit was seen before an exec whose stream stays open ends. */
const EXIT_GRACE_MS = 1000;

/**
 * Carries one pods/exec between its websocket (the channel protocol of
 * kubernetes-wire-fixture.ts) and the engine exec in the pod's container
 * `target.containerId`, and sends the exec's status when it ends.
 */
export function pipeExec(
  docker: Docker,
  ws: WebSocket,
  stream: Duplex,
  exec: Docker.Exec,
  target: { containerId: string; gone: () => boolean },
  withStdin: boolean,
  cut: { afterBytes: number } | undefined,
): void {
  let finished = false;
  let stdinBytes = 0;
  // Engine output: 8-byte frame headers (stream id, size), demultiplexed to channels 1 and 2.
  let pending: Buffer = Buffer.alloc(0);
  let lastOutputAt = Date.now();
  stream.on("data", (chunk: Buffer) => {
    lastOutputAt = Date.now();
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const kind = pending[0];
      const payload = pending.subarray(8, 8 + size);
      pending = pending.subarray(8 + size);
      if ((kind === 1 || kind === 2) && ws.readyState === WebSocket.OPEN) {
        ws.send(Buffer.concat([Buffer.from([kind]), payload]), () => {
          if (ws.bufferedAmount < OUTPUT_IN_FLIGHT) stream.resume();
        });
        if (ws.bufferedAmount >= OUTPUT_IN_FLIGHT) stream.pause();
      }
    }
  });
  stream.on("error", () => {});
  ws.on("message", (data: Buffer) => {
    if (data.length === 0) return;
    const channel = data[0];
    if (channel === 0 && withStdin) {
      stdinBytes += data.length - 1;
      if (cut && stdinBytes > cut.afterBytes) {
        ws.terminate();
        stream.destroy();
        return;
      }
      if (!stream.write(data.subarray(1))) {
        ws.pause();
        stream.once("drain", () => ws.resume());
      }
    } else if (channel === 255 && data[1] === 0 && ws.protocol === "v5.channel.k8s.io") {
      stream.end();
    }
  });
  // Closing the connection ends the command's stdin; the command itself runs on, as in a cluster,
  // its output dropped. The engine's stream must not stay paused for a reader that is gone: the
  // engine then never finishes that exec's exit, and every later exec in the container hangs.
  ws.on("close", () => {
    if (!finished && withStdin) stream.end();
    stream.resume();
  });
  const finish = async () => {
    if (finished) return;
    finished = true;
    clearInterval(poll);
    let status: Json;
    try {
      const state = await exec.inspect();
      const running = (await docker.getContainer(target.containerId).inspect()).State.Running;
      if (!running || state.ExitCode === null || target.gone()) throw new Error("container is not running");
      status =
        state.ExitCode === 0
          ? { metadata: {}, status: "Success" }
          : {
              metadata: {},
              status: "Failure",
              message: `command terminated with non-zero exit code: exit status ${state.ExitCode}`,
              reason: "NonZeroExitCode",
              details: { causes: [{ reason: "ExitCode", message: String(state.ExitCode) }] },
            };
    } catch (error) {
      status = {
        metadata: {},
        status: "Failure",
        message: `error executing command in container: ${(error as Error).message}`,
        reason: "InternalError",
      };
    }
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status))]), () => ws.close(1000));
    }
  };
  stream.on("end", () => void finish());
  stream.on("close", () => void finish());
  // Background children may hold the output open after the command
  // exits: then the exec ends once its output has been quiet a while
  // since the exit was first seen (never while output is still queued
  // behind a slow reader). Counted from the exit, not from the last
  // output: a loaded engine reports the exit before it delivers the
  // output, and ending then sent kubectl a Success with 0 bytes of a
  // `tar -c` (clean-clone run 29, kubernetes-kubectl.test.ts).
  let exitSeenAt: number | undefined;
  const poll = setInterval(() => {
    exec.inspect().then(
      (state) => {
        if (state.Running) return;
        exitSeenAt ??= Date.now();
        const drained = !stream.isPaused() && ws.bufferedAmount === 0;
        if (drained && Date.now() - Math.max(lastOutputAt, exitSeenAt) > EXIT_GRACE_MS) void finish();
      },
      () => void finish(),
    );
  }, 300);
}
