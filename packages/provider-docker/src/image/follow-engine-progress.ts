import type Docker from "dockerode";

/** One JSON message of an engine build, pull or import stream. */
interface EngineMessage {
  stream?: string;
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * Reads an engine progress stream to its end, handing each message on; an
 * `error` message (a failed RUN step, a missing image) rejects, since the
 * engine reports those in the stream with HTTP 200.
 */
export function followEngineProgress(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  onMessage: (message: EngineMessage) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure: string | undefined;
    docker.modem.followProgress(
      stream,
      (error: Error | null) => {
        if (error) reject(error);
        else if (failure !== undefined) reject(new Error(failure));
        else resolve();
      },
      (message: EngineMessage) => {
        if (message.error || message.errorDetail?.message) failure ??= message.errorDetail?.message ?? message.error;
        onMessage(message);
      },
    );
  });
}
