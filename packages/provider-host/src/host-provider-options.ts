import { z } from "zod";

/**
 * A user other than the app's to run a host computer's commands as, by
 * number: only an app running as root can give one (the system call that
 * switches user needs it). A desktop never runs as root (Chromium's
 * sandbox and the screen gateway refuse it), so an app that runs as root
 * (a CI machine, a server) names an ordinary user here.
 */
export const hostUserSchema = z.object({ uid: z.number().int().min(1), gid: z.number().int().min(0) }).strict();

export type HostUser = z.infer<typeof hostUserSchema>;

export const hostProviderOptionsSchema = z
  .object({
    /**
     * The app's folder for host computers: each computer's home is
     * `<dataDir>/host-homes/<homeKey>` (unless `homesDir` says otherwise)
     * and what the provider keeps of each computer (its record, its
     * desktops' bookkeeping) is under `<dataDir>/host-computers/<id>`.
     */
    dataDir: z.string().min(1),
    /** Where the homes are instead: each computer's home is `<homesDir>/<homeKey>`. */
    homesDir: z.string().min(1).optional(),
    /**
     * The desktop: `"none"` (no desktop; shell and files only), or
     * `"private"`, an X display of its own per bot that the computer starts
     * (Xvfb, as the computer image runs it), with the page browser and
     * screens through the gateway. What the host lacks for it is named at
     * provision with the Debian package to install (`UNSUPPORTED`).
     */
    display: z.enum(["none", "private"]).default("none"),
    /** Run commands as this user instead of the app's (the app must run as root to give one). */
    user: hostUserSchema.optional(),
    /**
     * Variables every command of the computer gets, beside `HOME` (the
     * home), `PATH` and `LANG`. The app's own environment is never passed
     * on: it may hold the app's keys.
     */
    env: z.record(z.string(), z.string()).default({}),
    /**
     * The `PATH` commands run with and the display stack's programs are
     * looked up in (default: the app's `PATH`).
     */
    path: z.string().min(1).optional(),
    /** Active desktops allowed at once on a computer when its spec does not say (0 = no cap). */
    screenLimit: z.number().int().min(0).max(1000).default(0),
  })
  .strict();

/** Options of `hostProvider`. */
export type HostProviderOptions = z.input<typeof hostProviderOptionsSchema>;
export type ParsedHostProviderOptions = z.output<typeof hostProviderOptionsSchema>;
