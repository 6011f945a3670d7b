import type { BackgroundWorkHolder } from "./background-work-holder.js";

/**
 * What runs in the background on a computer. `unknown` means the scan
 * cannot vouch for its answer (an unreadable proc, an unexpected error, no
 * python3, a cut command): it never authorises cleanup or signals.
 */
export type BackgroundWorkScan =
  | {
      readonly status: "ok";
      readonly holders: readonly BackgroundWorkHolder[];
      /**
       * Processes whose descriptors the scanner may not read (another uid,
       * without CAP_SYS_PTRACE): skipped, as their links cannot be observed.
       */
      readonly unreadable: number;
    }
  | { readonly status: "unknown"; readonly reason: string };
