import type { DesktopOptions } from "../contract/desktop-options.js";
import type { DesktopSession } from "../contract/desktop-session.js";
import type { OpContext } from "../contract/op-context.js";

/** What a machine's desktop calls go to: the Linux desktop runtime, or any other with these two verbs. */
export interface MachineDesktops {
  openDesktop(botId: string, ctx?: OpContext, opts?: DesktopOptions): Promise<DesktopSession>;
  quiesceDesktops(ctx?: OpContext): Promise<() => Promise<void>>;
}
