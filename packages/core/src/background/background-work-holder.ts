/** One process holding one background-work marker open, as the in-computer scanner saw it. */
export interface BackgroundWorkHolder {
  readonly pid: number;
  /** The holder's real uid: the scanner reads every uid's descriptors it is allowed to. */
  readonly uid: number;
  /** The marker's path inside the computer (without the kernel's " (deleted)" suffix). */
  readonly marker: string;
  /** The job the marker names: `<job>.marker`. */
  readonly job: string;
  /** The marker file was removed while this process kept it open: the job still runs. */
  readonly deleted: boolean;
  /** The holder's command line, cut to 300 characters (for a person deciding what to stop). */
  readonly cmd: string;
}
