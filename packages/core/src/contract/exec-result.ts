/**
 * What a command did. A non-zero exit is a result, not an error. Output is
 * bytes, exactly as the command wrote them (decode it yourself).
 */
export interface ExecResult {
  /** The exit code; null when the process was killed by a signal. */
  readonly exitCode: number | null;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  /** The timeout passed and the process tree was killed. */
  readonly timedOut: boolean;
  /** Output went over `maxOutputBytes` and was cut; the rest was dropped. */
  readonly truncated: boolean;
  /** Wall time from start to exit, in milliseconds. */
  readonly durationMs: number;
}
