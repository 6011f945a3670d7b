/** What a home store knows about a home's latest checkpoint. */
export interface HomeCheckpoint {
  readonly homeKey: string;
  /** Grows by one per checkpoint and never goes back, also across deletes. */
  readonly revision: number;
  /** When the checkpoint committed, in milliseconds since the epoch. */
  readonly createdAt: number;
  /** Bytes of file content; null for a mounted home (nothing was copied or read). */
  readonly bytes: number | null;
  /** Regular files in the home; null for a mounted home. */
  readonly files: number | null;
  /** `sha256:<hex>` of the home's archive as packed; null for a mounted home. */
  readonly digest: string | null;
  /** True when the live home is the store's folder and only the marker advanced. */
  readonly mounted: boolean;
}
