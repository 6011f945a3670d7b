import { z } from "zod";

export const desktopOptionsSchema = z.object({
  /** The display size; the provider's default when absent. */
  screen: z
    .object({
      width: z.number().int().min(64).max(7680),
      height: z.number().int().min(64).max(4320),
    })
    .optional(),
  /**
   * An upstream proxy for this bot's browser. Credentials never travel in
   * argv; the runtime hands them to a loopback relay.
   */
  proxy: z
    .object({
      server: z.string().url(),
      username: z.string().optional(),
      password: z.string().optional(),
    })
    .optional(),
});

export type DesktopOptions = z.input<typeof desktopOptionsSchema>;
