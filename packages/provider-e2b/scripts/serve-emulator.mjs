#!/usr/bin/env node
// Serves the E2B emulator on loopback for clients this repository did not
// write, such as E2B's own SDK tests run from a copy of their repository
// kept elsewhere (README "E2B's own SDK tests"). Prints the variables the
// SDK reads, then runs until interrupted; on exit it prints every exchange
// that left the service's definition and how often each operation was called.
//
//   npm run build -w @agent-computer/provider-e2b
//   node packages/provider-e2b/scripts/serve-emulator.mjs
import { randomBytes } from "node:crypto";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { E2bEmulator } from "@agent-computer/provider-e2b/testing";

const say = (line) => process.stdout.write(`${line}\n`);
const host = await checkDockerHost();
if (host.missing) {
  process.stderr.write(`The emulator's sandboxes are containers of the computer image: ${host.missing}\n`);
  process.exit(1);
}
const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
// E2B's tests start the templates `base` and `httpbin`; both are the computer image here.
const emulator = new E2bEmulator({ templates: { base: host.image, httpbin: host.image }, docker: host.docker, apiKey });
await emulator.start();
say(`E2B_API_URL=${emulator.apiUrl}`);
say(`E2B_SANDBOX_URL=${emulator.sandboxUrl}`);
say(`E2B_API_KEY=${apiKey}`);
say(`E2B_DOMAIN=${emulator.domain}`);

async function stop() {
  const { violations, calls } = emulator.recorder;
  say(`\nexchanges outside the definition: ${violations.length}`);
  for (const violation of violations) say(`  ${violation.call} (${violation.where}): ${violation.message}`);
  const counts = new Map();
  for (const call of calls) {
    const name = call.operation ?? `(no operation) ${call.method} ${call.path}`;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  say("calls per operation:");
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1])) say(`  ${String(count).padStart(5)} ${name}`);
  await emulator.close();
  process.exit(0);
}
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
