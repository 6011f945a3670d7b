// The quickstart: a real computer where one can be had, a command, a file,
// the bot's desktop as a PNG, the home exported, the computer destroyed, a
// replacement on a NEW home key, the home imported, and the file found again.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { Machine } from "@agent-computer/core";
import { chooseProvider } from "./choose-provider.js";
import { stage } from "./stage.js";

const outDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "out");

async function main(): Promise<void> {
  const provider = await chooseProvider(join(outDir, "quickstart-data"));
  const run = Date.now().toString(36);
  const spec = (homeKey: string) => ({ computerId: `quickstart-${run}`, homeKey, labels: { app: "quickstart" } });

  const machine: Machine = await stage("provision a computer", () => provider.provision(spec(`home-${run}-a`)));
  console.log(`  ref ${machine.ref}, home ${machine.workspacePath}`);

  const uname = await stage("run a command", () => machine.exec({ shell: "uname -sm && echo hello from $(pwd)" }));
  console.log(indent(new TextDecoder().decode(uname.stdout)));

  const note = `Notes of the quickstart bot, written ${new Date().toISOString()}`;
  await stage("write bots/quickstart/notes.txt", () =>
    machine.files.write("bots/quickstart/notes.txt", new TextEncoder().encode(note)),
  );
  const read = await stage("read it back", () => machine.files.read("bots/quickstart/notes.txt"));
  console.log(`  ${new TextDecoder().decode(read)}`);

  if (machine.openDesktop) {
    const desktop = await stage("open the bot's desktop", () => machine.openDesktop!("quickstart"));
    await stage("click and type on it", () =>
      desktop.act([
        { type: "click", x: 120, y: 80 },
        { type: "type", text: "hello desktop" },
      ]),
    );
    const frame = await stage("observe the screen", () => desktop.observe());
    await mkdir(outDir, { recursive: true });
    const png = join(outDir, "quickstart-desktop.png");
    await writeFile(png, frame.image!);
    console.log(
      `  ${frame.width}x${frame.height} PNG, frame ${frame.frameHash.slice(0, 12)}, saved to out/quickstart-desktop.png`,
    );
    await desktop.release();
  } else {
    console.log("- this provider has no desktop; skipping the screenshot");
  }

  const archive = await stage("export the workspace", async () => collect(await machine.files.exportWorkspace()));
  console.log(`  ${archive.length} bytes of tar`);
  await stage("destroy the computer", () => machine.destroy());

  let replacement = await stage("provision a replacement on a new home key", () =>
    provider.provision(spec(`home-${run}-b`)),
  );
  if (provider.capabilities.mountedHome)
    await stage("stop it (a mounted home imports while stopped)", () => replacement.stop());
  await stage("import the workspace", () => replacement.files.importWorkspace(toStream(archive)));
  if (provider.capabilities.mountedHome) {
    const again = await stage("reconnect", () => provider.reconnect(replacement.ref));
    if (again === "gone") throw new Error("the replacement vanished");
    replacement = again;
  }
  const restored = await stage("read the restored file", () => replacement.files.read("bots/quickstart/notes.txt"));
  await replacement.destroy();
  console.log(`\nRestored file content: ${new TextDecoder().decode(restored)}`);
}

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

function toStream(bytes: Buffer) {
  return Readable.from([bytes]);
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
