import { z } from "zod";
import { backgroundWorkOptionsSchema } from "./background-work-options.js";

export const backgroundCancelOptionsSchema = backgroundWorkOptionsSchema.extend({
  /** The signal for each holder (default TERM). */
  signal: z.enum(["TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2"]).default("TERM"),
});

/** Options of `cancelBackgroundWork`. */
export type BackgroundCancelOptions = z.input<typeof backgroundCancelOptionsSchema>;
