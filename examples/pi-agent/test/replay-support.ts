import type { Machine, SandboxProvider } from "@agent-computer/core";
import type { BotRun, ComputerRuntime } from "@agent-computer/runtime";
import type { Context } from "@mariozechner/pi-ai";
import { expect } from "vitest";

// What the Pi replays share: a page served on the computer's loopback, the
// latest tool result the scripted model reads, and the computer removed
// for good at the end.

/** Serves `<workdir>/<folder>` on 127.0.0.1:`port` in the computer and waits until it answers. */
export async function servePage(machine: Machine, workdir: string, folder: string, port: number): Promise<void> {
  // Started, then waited for: a second's sleep was not enough on a loaded machine (the model
  // then met a page without its button, and the run ended before any file was written).
  const started = await machine.exec({
    shell: `(python3 -m http.server ${port} --bind 127.0.0.1 --directory ${folder} >/dev/null 2>&1 &)
for i in $(seq 1 300); do
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' http://127.0.0.1:${port}/ 2>/dev/null && exit 0
  sleep 0.1
done
exit 1`,
    cwd: workdir,
  });
  expect(started.exitCode, `the page server on ${port} answers`).toBe(0);
}

/** The latest tool result in the model's context. */
export function lastToolResult(context: Context): { text: string; isError: boolean } {
  const result = [...context.messages].reverse().find((m) => m.role === "toolResult");
  if (result?.role !== "toolResult") throw new Error("the model expected a tool result");
  return { text: result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n"), isError: result.isError };
}

/** Ends the run and removes its machine (and the page servers it runs) for good. */
export async function endAndRemove(runtime: ComputerRuntime, run: BotRun, provider: SandboxProvider): Promise<void> {
  await run.end("completed");
  const computer = await runtime.leases.getComputer(run.computerId);
  const left = await provider.reconnect(computer?.providerRef as `${string}:${string}`);
  if (left !== "gone") await left.destroy();
}
