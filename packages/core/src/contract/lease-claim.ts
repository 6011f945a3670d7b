/**
 * The caller's lease as a provider sees it: the key it guards and its
 * fencing token. Providers pass it through; the lease engine checks it.
 */
export interface LeaseClaim {
  readonly key: string;
  /** Grows with every new holder of `key`; a smaller token is stale. */
  readonly token: number;
}
