/**
 * What a format-v2 checkpoint stores for one revision (README "Format v2"):
 * every directory and regular file of the home in restore order, each file
 * with the chunks that hold its bytes. Sealed as one object bound to the
 * storage id and revision (sealed-manifest.ts).
 */
export interface HomeManifest {
  readonly format: 2;
  readonly storageId: string;
  readonly revision: number;
  /** Parents before children; no path twice. */
  readonly entries: readonly HomeManifestEntry[];
}

export type HomeManifestEntry =
  | { readonly path: string; readonly kind: "directory"; readonly mode: number; readonly mtime: number }
  | {
      readonly path: string;
      readonly kind: "file";
      readonly mode: number;
      readonly mtime: number;
      readonly size: number;
      /** In file order; sizes add up to `size`. */
      readonly chunks: readonly { readonly name: string; readonly size: number }[];
    };
