/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export interface RetryWithinOptions {
  /** No attempt starts after this (epoch ms). */
  until: number;
  /** The caller's abort: its reason is thrown as it is. */
  signal?: AbortSignal;
  /** Whether a failure is worth another attempt (429, 5xx, no answer). */
  isTransient(error: unknown): boolean;
  /** The error thrown for the last failure, or for one not worth retrying. */
  failure(error: unknown): unknown;
  /** The first wait (default 100 ms); each next one doubles, up to `maxDelayMs` (default 2 s), with jitter. */
  firstDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs a call to a service, again after a transient failure with backoff
 * while the deadline allows, and throws `failure(last error)` otherwise.
 * One loop for every hosted provider's control-plane calls.
 */
export async function retryWithin<T>(call: () => Promise<T>, options: RetryWithinOptions): Promise<T> {
  const first = options.firstDelayMs ?? 100;
  const most = options.maxDelayMs ?? 2_000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      const wait = Math.min(most, first * 2 ** attempt) * (0.5 + Math.random() / 2);
      if (!options.isTransient(error) || Date.now() + wait >= options.until) throw options.failure(error);
      await abortableSleep(wait, options.signal);
    }
  }
}
