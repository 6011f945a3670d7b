import type { Readable } from "node:stream";

/**
 * Rejects with the signal's reason when it fires first. The request behind
 * `promise` is left to finish: use it for clients that take no signal.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Its later failure is nobody's to handle: never an unhandled rejection
    // (a client's error may hold the request that made it, credentials included).
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Destroys `stream` with the signal's reason when it fires, so an abort or
 * deadline cuts a transfer instead of only the wait for it. Returns the
 * function that stops watching.
 */
export function destroyOnAbort(stream: Readable, signal: AbortSignal): () => void {
  const onAbort = () => stream.destroy(signal.reason as Error);
  signal.addEventListener("abort", onAbort, { once: true });
  return () => signal.removeEventListener("abort", onAbort);
}
