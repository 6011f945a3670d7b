/**
 * What the harness wrote into the home, path (home-relative) to content:
 * what a restored home must hold. Bots write distinct paths, so the map
 * never races.
 */
export class ExpectedHome {
  private readonly files = new Map<string, string>();

  set(homePath: string, content: string): void {
    this.files.set(homePath, content);
  }

  /** A copy, taken at a checkpoint. */
  snapshot(): ReadonlyMap<string, string> {
    return new Map(this.files);
  }
}
