/**
 * What a service gives a machine whose command API has no stream: a
 * synchronous command that answers with its whole (maybe cut) output, a
 * detached start, the service's own view of a detached process, and a
 * files API (docs/writing-a-hosted-provider.md, "Commands without a
 * stream"). Box is one; the kit runs byte-exact commands over it.
 */
export interface DetachedChannel {
  /**
   * Runs `line` with sh from `/`; on a machine the service put to sleep,
   * wakes it first, unless `wake` is false: then the call fails.
   */
  sync(line: string, signal: AbortSignal, timeoutSeconds?: number, options?: WakeOption): Promise<SyncAnswer>;
  /** Starts `line` with sh from `/`, outliving the call; answers the service's id of the process. */
  detach(line: string, signal: AbortSignal): Promise<string>;
  /** Whether the service still counts a detached process as running, and its exit code once it ended. */
  processState(id: string, signal: AbortSignal): Promise<{ running: boolean; exitCode?: number | null }>;
  /** Writes a whole file (absolute path) through the files API. */
  writeFile(path: string, bytes: Uint8Array, signal: AbortSignal): Promise<void>;
  /** Reads a whole file (absolute path) through the files API. */
  readFile(path: string, signal: AbortSignal): Promise<Buffer>;
  /** Masks the service's secrets out of text an error quotes. */
  redact(text: string): string;
}

/**
 * Whether a call may wake (start, resume) a machine that sleeps. Only a
 * call that begins work does: following, feeding or killing a command and
 * cleaning up after it (removing its files, ending its session) may land
 * after the machine was stopped, where the command went with it, and must
 * not start it again (a stopped machine stays stopped).
 */
export interface WakeOption {
  /** Default true. */
  wake?: boolean;
}

/** A synchronous command's answer as the service gives it. */
export interface SyncAnswer {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** The service cut stdout short. */
  stdoutTruncated?: boolean;
}
