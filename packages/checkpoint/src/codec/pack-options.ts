/** Options of `packHome`. */
export interface PackOptions {
  /** Extra filter: return false to leave a home-relative path (and all below it) out. */
  include?: (relativePath: string) => boolean;
}
