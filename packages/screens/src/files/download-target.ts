/**
 * Where a download's bytes go (the HTTP response, in create-files.ts):
 * headers once the path is known good, then the bytes as the machine sends
 * them, with the browser's pace and departure.
 */
export interface DownloadTarget {
  /** Called once, before the first byte (or at the end, for an empty file): a refusal before it is a status. */
  begin(name: string): void;
  /** Takes bytes as they arrive; it may buffer them (at most one chunk, see files-download.ts). */
  write(chunk: Uint8Array): void;
  /** Resolves once the browser took what was written; rejects ABORTED when it went away. */
  drained(): Promise<void>;
  /** Aborts when the browser went away: the read in the machine is stopped then. */
  readonly signal: AbortSignal;
}
