/**
 * A progress event of `ObjectAgentHomeStore`, one per real step, so a
 * caller can show where a long checkpoint or restore is, and a test can
 * stop the process exactly there.
 */
export type HomeStoreStage =
  /** The home is being read into an archive and sealed (the first part of the upload overlaps it). */
  | { readonly stage: "packing"; readonly homeKey: string; readonly revision: number }
  /** Part `part` (from 1) of the object is being sent; `bytes` sealed bytes so far, this part included. */
  | {
      readonly stage: "uploading";
      readonly homeKey: string;
      readonly revision: number;
      readonly part: number;
      readonly bytes: number;
    }
  /** The object is complete in the bucket but not yet the home's revision. */
  | {
      readonly stage: "uploaded";
      readonly homeKey: string;
      readonly revision: number;
      readonly objectKey: string;
      readonly bytes: number;
    }
  /** The commit hook (the fenced compare-and-set) is running. */
  | { readonly stage: "committing"; readonly homeKey: string; readonly revision: number }
  /** Committed; older objects of the home are being deleted. */
  | { readonly stage: "cleaning-up"; readonly homeKey: string; readonly revision: number }
  /** The stored revision is being downloaded, opened and checked into the cache. */
  | { readonly stage: "downloading"; readonly homeKey: string; readonly revision: number; readonly objectKey: string };
