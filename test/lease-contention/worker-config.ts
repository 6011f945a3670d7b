/** What the parent tells one contention worker process. */
export interface WorkerConfig {
  store: "sqlite" | "postgres";
  /** The SQLite file or the PostgreSQL URL. */
  location: string;
  computers: string[];
  holder: string;
  ops: number;
  ttlMs: number;
  pauseMs: number;
  pauseChance: number;
  /** false: advisory check + version-only write, which the checker must catch. */
  fence: boolean;
  seed: number;
  eventsFile: string;
}
