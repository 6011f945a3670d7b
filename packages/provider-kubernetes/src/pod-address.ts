/** Where a pod lives: enough to build its API paths. */
export interface PodAddress {
  readonly namespace: string;
  readonly name: string;
  readonly container: string;
}
