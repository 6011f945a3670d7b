/** What `buildComputerImage` did. */
export interface BuildComputerImageResult {
  /** The image reference, `repository:tag`. */
  readonly image: string;
  /** False when an image with this exact tag was already there. */
  readonly built: boolean;
  /** How the base image was found: present, pulled, or made with debootstrap. */
  readonly baseImage: "present" | "pulled" | "made";
  readonly durationMs: number;
}
