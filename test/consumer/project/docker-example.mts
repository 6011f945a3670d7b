// provider-docker's README example on the real engine: provision a computer
// from the computer image (the tag the installed desktop-runtime computes),
// run a command as its user, write and read a file, destroy it.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { opContext } from "@agent-computer/core";
import { dockerProvider } from "@agent-computer/provider-docker";

const dataDir = await mkdtemp(join(tmpdir(), "consumer-docker-esm-"));
const id = `consumer-esm-${process.pid}`;
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
console.log(`docker (ESM): ${computer.ref.slice(0, 19)}... provisioned, ran as "computer", wrote a file, destroyed`);
