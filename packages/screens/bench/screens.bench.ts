// `npm run bench -- screens`: a person's live screen of a real Docker
// computer, as the provider makes it by default (the display in a container
// of its own), through the screens proxy and the display's gateway, beside
// websockify straight to the same display's x11vnc, in the same run:
// capability issue to first frame, and frames per second while a page
// animates. Both sides read with the same RFB client (Raw encoding).
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, DISPLAY_LABELS, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime } from "@agent-computer/runtime";
import { type BenchCase, benchOptionsFromArgv, runBench } from "@agent-computer/testing/bench";
import { chooseTestProvider, RfbTestClient, SITE, serveFixtureSite } from "@agent-computer/testing/provider-test";
import { createScreens, runtimeScreenAuthority } from "../src/index.js";

/** Where the baseline's websockify listens in the display's container, reached at its address on the computers' network. */
const DIRECT_PORT = 6081;
/** The view x11vnc of display slot 0 (the gateway's `5700 + 2 * slot`). */
const VIEW_VNC_PORT = 5700;
const FRAMES_PER_RUN = 30;

// Docker as it comes: this host reaches its containers' addresses, so the baseline needs no port of its own.
const chosen = await chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider });
if (chosen.missing) throw new Error(`The screens bench cannot run: ${chosen.missing}`);
const dataDir = await mkdtemp(join(tmpdir(), "agent-computer-screens-bench-"));
const provider = chosen.provider({ dataDir });
const runtime = createComputerRuntime({
  provider,
  stateStore: new MemoryStateStore(),
  homeStore: new LocalAgentHomeStore({ dataDir }),
  idleMs: 0,
});
const computerId = runtime.computerIdFor({ workspaceId: "bench", botId: "alpha" });
let machine: Machine | undefined;
const server = createServer();

try {
  // The bot shows a page that animates.
  const run = runtime.startRun({ workspaceId: "bench", botId: "alpha" });
  await serveFixtureSite(await run.machine());
  await (await run.desktop()).pageBrowser?.navigate(`${SITE}/animate.html`);
  await run.end("completed");
  const record = await runtime.leases.getComputer(computerId);
  machine = (await provider.reconnect(record?.providerRef as ProviderRef)) as Machine;

  const screens = createScreens({ authority: runtimeScreenAuthority(runtime), secret: randomBytes(32) });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxyOrigin = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issue = () => screens.issueScreenCapability({ computerId, botId: "alpha", mode: "view", ttlMs: 120_000 });

  // The first grant starts the display's view x11vnc; the baseline bridges straight to it, in the
  // container that holds it (the computer's display container, which its label names).
  await RfbTestClient.open({ url: `${proxyOrigin}${(await issue()).url}` }).then((c) => c.close());
  const computer = await chosen.docker.getContainer(machine.ref.slice("docker:".length)).inspect();
  const holder = await chosen.docker
    .getContainer(computer.Config.Labels?.[DISPLAY_LABELS.displayContainer] ?? computer.Id)
    .inspect();
  const started = spawnSync(
    "docker",
    [
      "exec",
      holder.Id,
      "sh",
      "-c",
      `setsid nohup websockify 0.0.0.0:${DIRECT_PORT} 127.0.0.1:${VIEW_VNC_PORT} >/tmp/websockify.log 2>&1 < /dev/null &
for i in $(seq 1 50); do curl -s -o /dev/null http://127.0.0.1:${DIRECT_PORT}/ && exit 0; sleep 0.1; done; cat /tmp/websockify.log; exit 1`,
    ],
    { encoding: "utf8" },
  );
  if (started.status !== 0)
    throw new Error(`websockify did not come up beside the display: ${started.stdout}${started.stderr}`);
  // Its address on the computers' network (the display's other network is internal to the pair).
  const mode = holder.HostConfig.NetworkMode;
  const address = Object.entries(holder.NetworkSettings.Networks ?? {}).find(
    ([name, network]) => name === mode || network.NetworkID === mode,
  )?.[1].IPAddress;
  if (!address)
    throw new Error(`The display's container ${holder.Name} has no address on ${holder.HostConfig.NetworkMode}`);
  const directUrl = `ws://${address}:${DIRECT_PORT}`;

  /** Connects, shakes hands, asks for Raw, and reads one whole frame. */
  const firstFrame = async (url: string) => {
    const client = await RfbTestClient.open({ url });
    const init = await client.handshake();
    client.useRawEncoding();
    client.requestFrame(init.width, init.height, false);
    await client.readFrame(init.bitsPerPixel);
    return { client, init };
  };
  /** A connection that keeps asking for what changed, as a viewer does. */
  const streaming = async (url: string) => {
    const { client, init } = await firstFrame(url);
    return async () => {
      for (let i = 0; i < FRAMES_PER_RUN; i++) {
        client.requestFrame(init.width, init.height, true);
        await client.readFrame(init.bitsPerPixel);
      }
    };
  };
  const throughProxy = await streaming(`${proxyOrigin}${(await issue()).url}`);
  const direct = await streaming(directUrl);

  const cases: BenchCase[] = [
    {
      name: "capability issue to first frame",
      unit: "ms",
      subject: {
        label: "issue + screens proxy + gateway",
        run: async () => (await firstFrame(`${proxyOrigin}${(await issue()).url}`)).client.close(),
      },
      baseline: { label: "websockify to x11vnc", run: async () => (await firstFrame(directUrl)).client.close() },
    },
    {
      name: `frames while a page animates (${FRAMES_PER_RUN} per run)`,
      unit: "ops/s",
      work: FRAMES_PER_RUN,
      subject: { label: "screens proxy + gateway", run: throughProxy },
      baseline: { label: "websockify to x11vnc", run: direct },
    },
  ];
  await runBench("screens: live screen of a Docker computer", cases, benchOptionsFromArgv(process.argv.slice(2)));
  await screens.close();
} finally {
  server.close();
  await runtime.deleteComputer(computerId).catch(() => {});
  await machine?.destroy().catch(() => {});
}
process.exit(0);
