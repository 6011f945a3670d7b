import type { DesktopSession, Machine } from "@agent-computer/core";
import { RfbTestClient } from "./rfb-test-client.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The takeover-input probe (docs/architecture.md §4, "Whose input a display
 * takes"): the bot, steered by a prompt injection, leaves an xdotool loop
 * moving the pointer to (5, 5) before it asks for a takeover; a person
 * takes control and puts the pointer at (400, 300). Where the pointer is
 * 2 s later says whose input the display took. `runAsBot` runs a shell
 * line as the bot's user where the bot's commands run, and gives its exit
 * status; `display` is the desktop's X display.
 */
export async function pointerAfterTakeover(
  desktop: DesktopSession,
  display: string,
  runAsBot: (line: string) => number | null | Promise<number | null>,
): Promise<{ x: number; y: number }> {
  const loop = `nohup sh -c 'while true; do DISPLAY=${display} xdotool mousemove 5 5 2>/dev/null; sleep 0.05; done' >/dev/null 2>&1 &`;
  const status = await runAsBot(loop);
  if (status !== 0) throw new Error(`the bot's pointer loop did not start (exit ${status})`);
  const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
  try {
    await control.handshake();
    for (let i = 0; i < 10; i++) {
      control.pointer(400, 300);
      await sleep(100);
    }
    await sleep(2000);
    return (await desktop.observe(undefined, { includeImage: false })).cursor;
  } finally {
    control.close();
  }
}

/**
 * The probe on a computer whose display shares the machine with the bot
 * (the hosted providers' READMEs, "The display and the bot's user"): the
 * loop starts through the machine's own exec, the path the bot's commands
 * take there, as the user the provider runs them as. In a session of its
 * own (`setsid`), as a bot leaves a process running: some providers end
 * what a command started with it (Daytona's session delete signals the
 * session's process group, provider-daytona's testing/daemon-stand-in.ts;
 * boxd ends the command's session, provider-boxd's
 * testing/boxd-exec-session.ts), and a process in a session of its own
 * outlives that. The loop runs until the machine ends, so a suite runs
 * this last on the machine it shares.
 */
export function pointerAfterTakeoverThroughExec(
  machine: Machine,
  desktop: DesktopSession & { readonly display: string },
): Promise<{ x: number; y: number }> {
  return pointerAfterTakeover(desktop, desktop.display, async (line) => {
    return (await machine.exec({ argv: ["setsid", "-w", "sh", "-c", line] })).exitCode;
  });
}
