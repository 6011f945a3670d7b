import { Readable } from "node:stream";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import type { ComputerRuntime } from "@agent-computer/runtime";
import { note, stage } from "./stage.js";

/**
 * Moves a computer's home to a machine on a NEW home key with the
 * provider's own export and import (a mounted home would otherwise hide a
 * broken transfer), and returns alpha's notes as found there.
 */
export async function moveHome(
  provider: SandboxProvider,
  runtime: ComputerRuntime,
  computerId: string,
): Promise<string> {
  const record = await runtime.leases.getComputer(computerId);
  const source = (await provider.reconnect(record!.providerRef as `${string}:${string}`)) as Machine;
  const archive = await stage("export the workspace", async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of await source.files.exportWorkspace()) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks);
  });
  note(`${archive.length} bytes of tar`);
  let target = await stage("provision a computer on a new home key", () =>
    provider.provision({
      computerId: `${computerId}-moved`,
      homeKey: `${computerId}-moved`,
      labels: { app: "quickstart" },
    }),
  );
  if (provider.capabilities.mountedHome)
    await stage("stop it (a mounted home imports while stopped)", () => target.stop());
  await stage("import the workspace", () => target.files.importWorkspace(Readable.from([archive])));
  if (provider.capabilities.mountedHome) {
    const again = await stage("reconnect", () => provider.reconnect(target.ref));
    if (again === "gone") throw new Error("the new computer vanished");
    target = again;
  }
  const notes = await stage("read bots/alpha/notes.txt there", () => target.files.read("bots/alpha/notes.txt"));
  await target.destroy();
  await source.destroy();
  return new TextDecoder().decode(notes);
}
