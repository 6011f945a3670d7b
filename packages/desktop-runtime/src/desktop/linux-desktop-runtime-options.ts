import { z } from "zod";

export const linuxDesktopRuntimeOptionsSchema = z.object({
  /**
   * Active desktops allowed at once on this computer (0 = no cap). Enforced
   * inside the computer under a lock; the runtime maps
   * `SANDBOX_TEAM_SCREEN_LIMIT` to the spec's `screenLimit`, which providers pass here.
   */
  screenLimit: z.number().int().min(0).max(1000).default(0),
  /**
   * How to run the in-computer `desktop` command. The computer image has it
   * on PATH; a provider that copies the bundle in elsewhere names it here
   * (e.g. `["node", "/opt/agent-computer/lib/desktop.mjs"]`).
   */
  command: z.array(z.string().min(1)).min(1).default(["desktop"]),
  /**
   * How calls reach the computer: `"service"` (the default) sends them to
   * the resident service over one websocket through the machine's
   * `portUrl`, falling back to exec per call where the machine has no
   * `portUrl` or the service cannot be reached; `"exec"` always runs the
   * `desktop` command through exec (one Node start per call).
   */
  transport: z.enum(["service", "exec"]).default("service"),
  /**
   * What `launch` may start on a desktop: any program (`true`, the
   * default), nothing (`false`), only the programs named (by their
   * argv[0], as given), or `"applications"`: the desktop applications of
   * the image (a `.desktop` entry in /usr/share/applications not run in a
   * terminal, found in the image's folders, never the home), started by
   * the in-computer `desktop launch` with the display's own configuration;
   * `open` then shows files in the bot's browser instead of `xdg-open`. A
   * provider whose display runs apart from the bot's processes
   * (`dockerProvider({ displayContainer: true })`) uses `"applications"`:
   * a program of the workspace, or one `xdg-open` picks for a file the bot
   * wrote, would run the bot's code beside the display.
   */
  launchPrograms: z.union([z.boolean(), z.literal("applications"), z.array(z.string().min(1)).max(32)]).default(true),
  /** The screen size when `openDesktop` gives none (default 1280x800, a size models handle well). */
  defaultScreen: z
    .object({ width: z.number().int().min(64).max(7680), height: z.number().int().min(64).max(4320) })
    .default({ width: 1280, height: 800 }),
});

/** Options of `LinuxDesktopRuntime`. */
export type LinuxDesktopRuntimeOptions = z.input<typeof linuxDesktopRuntimeOptionsSchema>;
