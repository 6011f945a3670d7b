// docker-example.mts as a CommonJS app: provider-docker's and
// desktop-runtime's CJS builds, the image folder found from the installed
// package.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { opContext } from "@agent-computer/core";
import { dockerProvider } from "@agent-computer/provider-docker";

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "consumer-docker-cjs-"));
  const id = `consumer-cjs-${process.pid}`;
  const provider = dockerProvider({ dataDir, network: "bridge" });
  const computer = await provider.provision({ computerId: id, homeKey: id, labels: { app: "consumer-test" } });
  try {
    const result = await computer.exec({ shell: "echo hello from $(id -un)" }, opContext({ timeoutMs: 30_000 }));
    assert.equal(result.exitCode, 0);
    assert.equal(Buffer.from(result.stdout).toString(), "hello from computer\n");
    await computer.files.write("notes/todo.txt", new TextEncoder().encode("ship it"));
    assert.equal(Buffer.from(await computer.files.read("notes/todo.txt")).toString(), "ship it");
    const listed = await provider.list({ labels: { app: "consumer-test" } });
    assert.ok(listed.includes(computer.ref), "list finds it by its label");
  } finally {
    await computer.destroy();
  }
  assert.equal(await provider.reconnect(computer.ref), "gone");
  await rm(dataDir, { recursive: true, force: true });
  console.log(`docker (CJS): ${computer.ref.slice(0, 19)}... provisioned, ran as "computer", wrote a file, destroyed`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
