import type { BackgroundWorkHolder } from "./background-work-holder.js";

/** What a cancel of background work did. Only an `ok` scan ever signals. */
export type BackgroundWorkCancellation =
  | {
      readonly status: "ok";
      /** The holders the scan found (before any signal). */
      readonly holders: readonly BackgroundWorkHolder[];
      readonly unreadable: number;
      readonly signal: string;
      /** Pids signalled, each after its markers and start time were re-checked. */
      readonly signalled: readonly number[];
      /** Pids not signalled, and why (gone, pid reused, no longer holds a marker, not permitted). */
      readonly skipped: readonly { readonly pid: number; readonly reason: string }[];
    }
  | {
      readonly status: "unknown";
      readonly reason: string;
      readonly signalled: readonly [];
      /**
       * False: the scanner reported unknown and signalled nothing. True: the
       * command was cut (timeout, lost connection) after it may have signalled.
       */
      readonly uncertain: boolean;
    };
