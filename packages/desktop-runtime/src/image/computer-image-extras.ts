/**
 * Opt-in parts of the computer image that come from outside Debian. Each
 * changes the image, so each changes its tag.
 */
export interface ComputerImageExtras {
  /** Brave from Brave's apt repository (the build fails with a clear message when it is unreachable). */
  brave?: boolean;
  /** uv from its GitHub release (the build fails with a clear message when it is unreachable). */
  uv?: boolean;
  /** The uv release to install (default: the Dockerfile's UV_VERSION). */
  uvVersion?: string;
}
