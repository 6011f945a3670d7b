import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chown, mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import { delimiter, join, resolve } from "node:path";
import {
  AgentComputerError,
  loggerOf,
  type Machine,
  type ProviderCapabilities,
  type ProviderRef,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { checkDesktopUser, checkDisplayStack, checkHostPlatform } from "./display-stack.js";
import { type HostComputerRecord, HostComputerRecords } from "./host-computer-records.js";
import { desktopRuntimeFiles, prepareDesktopBin } from "./host-desktops.js";
import { HostMachine, type HostMachineParts } from "./host-machine.js";
import { type HostProviderOptions, hostProviderOptionsSchema } from "./host-provider-options.js";

/**
 * What a host computer can do (the product's "this Mac" computer): the
 * machine is the app's own, so it never bills while running (the runtime's
 * active cap does not apply) and its running time is not recorded; a
 * person at it has a shell already, so its desktops offer no terminal;
 * stop ends its processes and keeps its home, and reconnect resumes it.
 */
export const HOST_CAPABILITIES: ProviderCapabilities = {
  desktop: false,
  multiScreen: false,
  pageBrowser: false,
  terminal: false,
  billsWhileRunning: false,
  stopKeepsMachine: true,
  mountedHome: false,
  recordsRunTime: false,
};

/** With a private display: a desktop per bot with its page browser, several at once. */
const WITH_PRIVATE_DISPLAY: Partial<ProviderCapabilities> = { desktop: true, multiScreen: true, pageBrowser: true };

const COMPUTER_ID = /^[0-9a-f]{24}$/;

/**
 * Computers on the machine the app runs on, without a container
 * (docs/architecture.md §9): no isolation at all (README.md). Linux only;
 * `UNSUPPORTED` elsewhere.
 */
export function hostProvider(options: HostProviderOptions): SandboxProvider {
  const parsed = parseInput(hostProviderOptionsSchema, options, "HostProviderOptions");
  checkHostPlatform(process.platform);
  const dataDir = resolve(parsed.dataDir);
  const homesDir = resolve(parsed.homesDir ?? join(dataDir, "host-homes"));
  const records = new HostComputerRecords(join(dataDir, "host-computers"));
  const desktopFiles = desktopRuntimeFiles();
  const appPath = parsed.path ?? process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const desktopBin = join(dataDir, "host-bin");
  const parts: HostMachineParts = {
    records,
    user: parsed.user,
    env: parsed.env,
    // The desktop runtime's own programs (the Chromium launcher, the scanner) come first, as in the image.
    path: parsed.display === "private" ? [desktopBin, desktopFiles.binDir, appPath].join(delimiter) : appPath,
  };
  const machineOf = (record: HostComputerRecord) => new HostMachine(record, parts);
  const capabilities = {
    ...HOST_CAPABILITIES,
    ...(parsed.display === "private" ? WITH_PRIVATE_DISPLAY : {}),
  };

  return defineSandboxProvider({
    kind: "host",
    capabilities,
    defaults: parsed,
    // Nothing is started from an image: the computer is this machine as it is.
    defaultImage: async () => "host",
    machineId: (id) => matchRefId("host", id, COMPUTER_ID, "<24 hex digits>")[0],

    async provision({ spec, context }) {
      if (parsed.display === "private") {
        checkDesktopUser(parsed.user?.uid ?? process.getuid?.());
        await checkDisplayStack(appPath);
        checkDesktopCommand(desktopFiles.command[1] as string);
        await prepareDesktopBin(desktopBin);
      }
      const id = randomBytes(12).toString("hex");
      const homeDir = join(homesDir, spec.homeKey);
      // Searchable, not listable, by the computer's user: it reaches its own home and no other's name.
      await mkdir(homesDir, { recursive: true, mode: 0o711 });
      await mkdir(homeDir, { recursive: true, mode: 0o700 });
      if (parsed.user) await chown(homeDir, parsed.user.uid, parsed.user.gid);
      const record: HostComputerRecord = {
        id,
        computerId: spec.computerId,
        homeKey: spec.homeKey,
        homeDir,
        labels: spec.labels,
        screenLimit: spec.screenLimit,
        display: parsed.display,
        ...(parsed.display === "private"
          ? { gatewayPort: await freeLoopbackPort(), desktopState: await records.makeDesktopState(parsed.user) }
          : {}),
        status: "running",
      };
      await records.save(record);
      loggerOf(context).info("host computer provisioned", { ref: `host:${id}`, homeKey: spec.homeKey });
      return machineOf(record);
    },

    async reconnect(id): Promise<Machine | "gone"> {
      const record = await records.load(id);
      if (!record) return "gone";
      if (record.status !== "running") {
        record.status = "running";
        await records.save(record);
      }
      return machineOf(record);
    },

    async list({ labels, running }): Promise<ProviderRef[]> {
      const matching = (await records.all()).filter(
        (r) =>
          (!running || r.status === "running") &&
          Object.entries(labels).every(([key, value]) => r.labels[key] === value),
      );
      return matching.map((r) => `host:${r.id}` as ProviderRef);
    },
  });
}

/** The desktop runtime's in-computer command is built into its package (`npm run build` there); without it no desktop starts. */
function checkDesktopCommand(bundle: string): void {
  if (existsSync(bundle)) return;
  throw new AgentComputerError(
    "UNAVAILABLE",
    `The desktop runtime's in-computer command is missing (${bundle}): @agent-computer/desktop-runtime is installed without its built files; reinstall it, or build it in a source checkout.`,
    { retryable: false },
  );
}

/**
 * A port no process holds on the host's loopback now, for a computer's
 * screen gateway: every host computer shares the host's network, so each
 * has a gateway port of its own (the image's 6080 is one computer's).
 */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
