import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LOOPBACK_PROXY_ENV } from "../../src/desktop/display-apart-policy.js";
import { CdpConnection, cdpJson } from "./cdp-connection.js";
import { CliError } from "./cli-error.js";
import { clearStaleXLock, type DesktopState, FIRST_CDP_PORT, FIRST_DISPLAY } from "./desktop-state.js";
import { makeProfileFolder, sharesBotNamespaces, xServerAccessArguments } from "./display-isolation.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { descendantsOf, identify, isAlive, type ProcessIdentity, signal, sleep, waitGone } from "./process-status.js";
import { browserProxyFor, type ProxyCredentials, stopProxyRelay } from "./proxy-relay-process.js";
import { frameHash, readFramebuffer } from "./screen-frame.js";
import { closeScreensOfSlot } from "./screen-teardown.js";

// How long each part of a desktop may take to come up. Generous: on a
// loaded host (CI's, with several browsers starting at once) Chromium took
// over 30 s to show its window; the host's own bound on a whole start is
// longer still (START_TIMEOUT_MS in src/desktop/linux-desktop-runtime.ts).
const X_START_MS = 20_000;
const BROWSER_START_MS = 60_000;
/**
 * How long a browser whose DevTools lists a page may go without a visible
 * window before its window is mapped again (`mapAgain`). Loaded CI hosts
 * showed windows that stayed unmapped for the whole minute, the window
 * manager idle in its event loop (clean-clone runs 12-16, issue 40's
 * repeated runs): a window Chromium sees as shown that openbox never
 * showed. Why openbox missed it is not known; what the display showed is
 * kept (`windowMappedAgain`) for the next time.
 */
const MAP_AGAIN_AFTER_MS = 10_000;

/** What `desktop start` needs. */
export interface StartRequest {
  readonly bot: string;
  /** The home; profiles live in `<home>/.browser-profiles/<bot>`. */
  readonly home: string;
  readonly width: number;
  readonly height: number;
  /** 0: no cap. Counted over every reserved slot, under the lock. */
  readonly screenLimit: number;
  /** An upstream proxy, without credentials in it. */
  readonly proxyServer?: string;
  /** The upstream's credentials: Chromium then goes through the bot's loopback relay (proxy-relay-process.ts). */
  readonly proxyCredentials?: ProxyCredentials;
}

export const displayOf = (slot: number) => `:${FIRST_DISPLAY + slot}`;
export const framebufferOf = (state: DesktopState, slot: number) => join(state.slotDir(slot), "Xvfb_screen0");
export const profileOf = (home: string, bot: string) => join(home, ".browser-profiles", bot);

/**
 * Brings up a bot's desktop, or returns the one it has. The slot is claimed
 * under the lock (so concurrent starts never pass `screenLimit`), the
 * processes start outside it (so two bots start in parallel).
 */
export async function startDesktop(state: DesktopState, request: StartRequest): Promise<DisplaySlotRecord> {
  const me = identify(process.pid);
  for (;;) {
    const claim = await state.locked(() => {
      reconcile(state);
      const existing = state.recordOf(request.bot);
      if (existing) {
        if (existing.status === "running") return { record: existing, mine: false };
        if (existing.status === "starting" && isAlive(existing.starter)) return { wait: true as const };
        // Quiesced (browser closed for an export), or a cut start or a failed stop: finish it here.
        existing.starter = me;
        existing.status = "starting";
        state.save(existing);
        return { record: existing, mine: true };
      }
      const reserved = state.records().length;
      if (request.screenLimit > 0 && reserved >= request.screenLimit) {
        throw new CliError(
          "MULTI_SCREEN_UNAVAILABLE",
          `This computer allows ${request.screenLimit} desktop(s) at once and all are in use; release one first. Shell and file tools still work.`,
        );
      }
      const slot = state.freeSlot();
      const record: DisplaySlotRecord = {
        bot: request.bot,
        slot,
        width: request.width,
        height: request.height,
        cdpPort: FIRST_CDP_PORT + slot,
        ...(sharesBotNamespaces() ? { devtoolsSocket: join(state.slotDir(slot), "devtools.sock") } : {}),
        incarnation: randomBytes(16).toString("base64url"),
        status: "starting",
        ...(me ? { starter: me } : {}),
      };
      state.save(record);
      return { record, mine: true };
    });
    if ("wait" in claim) {
      await sleep(200);
      continue;
    }
    if (!claim.mine) return claim.record;
    const record = claim.record;
    try {
      await bringUp(state, record, request);
    } catch (error) {
      // Leave nothing half-started; the slot is freed only when teardown worked.
      await teardown(state, record).catch(() => {});
      throw error;
    }
    record.status = "running";
    delete record.starter;
    state.save(record);
    return record;
  }
}

async function bringUp(state: DesktopState, record: DisplaySlotRecord, request: StartRequest): Promise<void> {
  const dir = state.slotDir(record.slot);
  mkdirSync(join(dir, "config", "gtk-3.0"), { recursive: true, mode: 0o700 });
  // A steady caret: Chromium takes its blink from GTK, and a blinking caret
  // would change every frame of an idle desktop.
  writeFileSync(join(dir, "config", "gtk-3.0", "settings.ini"), "[Settings]\ngtk-cursor-blink = false\n");
  const display = displayOf(record.slot);
  if (!isAlive(record.xserver)) {
    rmSync(framebufferOf(state, record.slot), { force: true });
    clearStaleXLock(FIRST_DISPLAY + record.slot);
    record.xserver = launch(dir, "xserver", "Xvfb", [
      display,
      "-screen",
      "0",
      `${record.width}x${record.height}x24`,
      "-fbdir",
      dir,
      "-nolisten",
      "tcp",
      ...xServerAccessArguments(state.dir),
      "-noreset",
    ]);
    state.save(record);
    await until(
      () => existsSync(framebufferOf(state, record.slot)) && xAnswers(display),
      X_START_MS,
      () => stillRunning(record.xserver, dir, "xserver"),
    );
  }
  if (!isAlive(record.windowManager)) {
    record.windowManager = launch(dir, "window-manager", "openbox", [], { DISPLAY: display });
    state.save(record);
    await until(
      () => windowManagerReady(display),
      X_START_MS,
      () => stillRunning(record.windowManager, dir, "window-manager"),
    );
  }
  if (!isAlive(record.browser)) {
    // A start without a proxy (a person's screen opening a quiesced bot) keeps the display's: the bot's
    // traffic must never fall back to going direct. Even a relay that died stays the address: loads then fail.
    const keep = request.proxyServer === undefined && record.browserProxy !== undefined;
    if (!keep) {
      const profile = profileOf(request.home, record.bot);
      record.browserProxy = await browserProxyFor(dir, record, profile, request.proxyServer, request.proxyCredentials);
    }
    state.save(record);
    await launchBrowser(state, record, request.home, record.browserProxy);
  }
}

/**
 * The browser's program and arguments: Chromium's wrapper, or with
 * DevTools on a pipe the bridge that starts it (devtools-pipe-bridge.ts).
 */
function browserCommand(record: DisplaySlotRecord, args: string[]): { program: string; args: string[] } {
  if (!record.devtoolsSocket) return { program: "agent-computer-chromium", args };
  const bundle = fileURLToPath(import.meta.url);
  return {
    program: process.execPath,
    args: [bundle, "devtools-bridge", record.devtoolsSocket, "--", "agent-computer-chromium", ...args],
  };
}

/**
 * Spellings of "this host" Chromium connects to directly whatever its proxy
 * rules say: `0.0.0.0` (also written `0`) and its IPv6 forms are not
 * loopback to Chromium's rules, yet Linux connects them to the loopback,
 * where a display's x11vnc and DevTools listen (issue 45, findings 2 and 3).
 */
const THIS_HOST_UNSPECIFIED = ["0.0.0.0", "::", "::ffff:0:0"];
/** Loopback as Chromium's implicit bypass knows it (localhost names, 127/8, ::1, IPv4-mapped 127/8). */
const THIS_HOST_LOOPBACK = ["localhost", "*.localhost", "127.*", "::1", "::ffff:7f*"];

/** Chromium's host rules that make every name in `hosts` fail to resolve (a refused request, not a connection). */
function unresolvable(hosts: readonly string[]): string {
  return `--host-resolver-rules=${hosts.map((host) => `MAP ${host} ~NOTFOUND`).join(", ")}`;
}

/**
 * Where the browser sends its requests. With the display in a container of
 * its own: loopback URLs go to the computer's loopback proxy
 * (loopback-proxy.ts) and every other URL direct (`<-loopback>` lifts
 * Chromium's implicit loopback bypass and `*` bypasses the rest; later rules
 * win), and no spelling of "this host" reaches the display's own loopback;
 * with the bot's upstream (or its relay) too, loopback URLs, which Chromium
 * never proxies, resolve to nothing rather than reach the display's services
 * (provider-docker README, "Display container"). On a display the bot shares,
 * its loopback is the bot's own. A display apart from the bot whose
 * browser names no proxy (a Kubernetes pod's display container, a second
 * user, without an egress policy) says "none" on the command line, which
 * wins over the profile's preferences: the profile is in the bot's home, and
 * a `proxy` preference the bot planted there carried a person's pages to
 * the bot (kubernetes-display-container.test.ts, "planted").
 */
function proxyArguments(proxyServer: string | undefined): string[] {
  const loopbackProxy = process.env[LOOPBACK_PROXY_ENV];
  if (!loopbackProxy && !proxyServer) return sharesBotNamespaces() ? ["--no-proxy-server"] : [];
  if (!loopbackProxy) return [`--proxy-server=${proxyServer}`];
  if (proxyServer)
    return [`--proxy-server=${proxyServer}`, unresolvable([...THIS_HOST_UNSPECIFIED, ...THIS_HOST_LOOPBACK])];
  return [`--proxy-server=${loopbackProxy}`, "--proxy-bypass-list=*;<-loopback>", unresolvable(THIS_HOST_UNSPECIFIED)];
}

/** Starts the bot's Chromium on its display and waits until its window and DevTools are up. */
export async function launchBrowser(
  state: DesktopState,
  record: DisplaySlotRecord,
  home: string,
  proxyServer?: string,
): Promise<void> {
  const dir = state.slotDir(record.slot);
  const display = displayOf(record.slot);
  const profile = profileOf(home, record.bot);
  makeProfileFolder(profile);
  // Locks left by a browser that no longer runs (a stopped or imported
  // computer, another host name) would make Chromium refuse the profile.
  for (const name of ["SingletonLock", "SingletonSocket", "SingletonCookie"])
    rmSync(join(profile, name), { force: true });
  // A profile with a saved session gets its tabs back; a new one opens a
  // blank page, not the new-tab page, which keeps loading (and animating
  // its tab) while it waits for a network the computer may not have.
  const firstRun = !existsSync(join(profile, "Default", "Sessions"));
  const browser = browserCommand(record, [
    profile,
    "--start-maximized",
    "--window-position=0,0",
    `--window-size=${record.width},${record.height}`,
    "--restore-last-session",
    "--hide-crash-restore-bubble",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
    ...proxyArguments(proxyServer),
    ...(firstRun ? ["about:blank"] : []),
  ]);
  record.browser = launch(dir, "browser", browser.program, browser.args, {
    DISPLAY: display,
    // "pipe": the wrapper opens no DevTools port; the bridge adds --remote-debugging-pipe.
    CDP_PORT: record.devtoolsSocket ? "pipe" : String(record.cdpPort),
    XDG_CONFIG_HOME: join(dir, "config"),
  });
  delete record.windowMappedAgain;
  state.save(record);
  const seen = { page: false, window: false, pageSince: 0 };
  await until(
    async () => {
      const targets = await cdpJson<{ type: string }[]>(record, "/json/list").catch(() => []);
      seen.page = targets.some((t) => t.type === "page");
      seen.window = seen.page && browserWindowShown(display);
      if (seen.page && !seen.pageSince) seen.pageSince = Date.now();
      if (
        !seen.window &&
        seen.pageSince &&
        Date.now() - seen.pageSince > MAP_AGAIN_AFTER_MS &&
        !record.windowMappedAgain
      ) {
        record.windowMappedAgain = windowsOf(display, record);
        mapAgain(display);
        state.save(record);
      }
      return seen.window;
    },
    BROWSER_START_MS,
    () => stillRunning(record.browser, dir, "browser"),
    // A start that never came up says how far it got, and what the browser said.
    () =>
      `${seen.page ? `DevTools listed a page, but no browser window became visible (${windowsOf(display, record)})` : "DevTools listed no page"}.${record.windowMappedAgain ? ` Its window was mapped again ${MAP_AGAIN_AFTER_MS / 1000} s after the page, when the display showed: ${record.windowMappedAgain}.` : ""} ${logTail(dir, "browser")}`,
  );
  await settled(framebufferOf(state, record.slot), 8000);
}

/**
 * Waits until the frame has not changed for 600 ms (four looks 200 ms
 * apart), or `ms` passes: a desktop is ready when its first frame is, not
 * when its processes are, so the caller's first observe sees a still
 * screen. Two looks were not enough on a loaded machine: Chromium's tab
 * strip held its loading icon for 200 ms and swapped it for the page's a
 * moment after the desktop was handed over.
 */
async function settled(framebuffer: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let last = "";
  let still = 0;
  while (Date.now() < deadline) {
    const hash = frameHash(readFramebuffer(framebuffer));
    still = hash === last ? still + 1 : 0;
    if (still === 3) return;
    last = hash;
    await sleep(200);
  }
}

/**
 * Stops a bot's processes, browser first and cleanly (DevTools' Browser.close
 * writes cookies, history and the session to disk), and frees the slot
 * only when every process is gone; otherwise the slot stays reserved.
 */
export async function stopDesktop(state: DesktopState, bot: string): Promise<DisplaySlotRecord | undefined> {
  const record = await state.locked(() => {
    const found = state.recordOf(bot);
    if (found && found.status !== "stopping") {
      found.status = "stopping";
      state.save(found);
    }
    return found;
  });
  if (!record) return undefined;
  await teardown(state, record);
  return record;
}

async function teardown(state: DesktopState, record: DisplaySlotRecord): Promise<void> {
  // Live screens first: no viewer may still be connected when the display goes to another bot.
  try {
    await closeScreensOfSlot(state, record.slot);
  } catch (error) {
    record.status = "stopping";
    record.lastError = `live screens did not close: ${(error as Error).message}`;
    state.save(record);
    throw new CliError(
      "UNAVAILABLE",
      `The live screens of ${record.bot} did not close; its slot stays reserved, try again.`,
    );
  }
  const browserClosed = await closeBrowser(record);
  const relayStopped = await stopProxyRelay(record);
  signal(record.windowManager, "SIGTERM");
  signal(record.xserver, "SIGTERM");
  let gone = await waitGone([record.windowManager, record.xserver], 3000);
  if (!gone) {
    signal(record.windowManager, "SIGKILL");
    signal(record.xserver, "SIGKILL");
    gone = await waitGone([record.windowManager, record.xserver], 2000);
  }
  if (!browserClosed || !gone || !relayStopped) {
    record.status = "stopping";
    record.lastError = `processes still running after teardown: ${[
      record.browser,
      record.proxyRelay,
      record.windowManager,
      record.xserver,
    ]
      .filter(isAlive)
      .map((p) => p?.pid)
      .join(", ")}`;
    state.save(record);
    throw new CliError("UNAVAILABLE", `The desktop of ${record.bot} did not stop; its slot stays reserved, try again.`);
  }
  await state.locked(() => {
    state.release(record);
    rmSync(state.slotDir(record.slot), { recursive: true, force: true });
  });
}

/**
 * Closes the browser so its profile is consistent on disk; true when it and
 * every process it started (zygotes, renderers, the GPU process, the crash
 * handler) are gone. Those outlive the browser's own exit by a moment, and
 * some write into the profile; a loaded machine once showed them still
 * running after a quiesce (docker-lazy-display, clean-clone run E).
 */
export async function closeBrowser(record: DisplaySlotRecord): Promise<boolean> {
  const family = descendantsOf(record.browser);
  if (!(await closeBrowserProcess(record))) return false;
  if (await waitGone(family, 5000)) return true;
  for (const process of family) signal(process, "SIGKILL");
  return waitGone(family, 3000);
}

async function closeBrowserProcess(record: DisplaySlotRecord): Promise<boolean> {
  if (!isAlive(record.browser)) return true;
  try {
    const version = await cdpJson<{ webSocketDebuggerUrl: string }>(record, "/json/version");
    const cdp = await CdpConnection.open(version.webSocketDebuggerUrl, record);
    await cdp.call("Browser.close", {}, 5000).catch(() => {});
    cdp.close();
  } catch {
    // DevTools unreachable: fall back to SIGTERM, which Chromium also treats as a clean exit.
    signal(record.browser, "SIGTERM");
  }
  if (await waitGone([record.browser], 15_000)) return true;
  signal(record.browser, "SIGTERM");
  if (await waitGone([record.browser], 5000)) return true;
  signal(record.browser, "SIGKILL");
  return waitGone([record.browser], 3000);
}

/** Closes every running browser cleanly, keeping displays and slots, so a workspace export sees consistent profiles. */
export async function quiesceDesktops(state: DesktopState): Promise<string[]> {
  const until = Date.now() + 60_000;
  while (state.records().some((r) => r.status === "starting" && isAlive(r.starter)) && Date.now() < until)
    await sleep(200);
  const quiesced: string[] = [];
  for (const record of state.records()) {
    if (record.status !== "running") continue;
    if (!(await closeBrowser(record))) {
      throw new CliError("UNAVAILABLE", `The browser of ${record.bot} did not close; its profile may be inconsistent.`);
    }
    await state.locked(() => {
      const now = state.recordOf(record.bot);
      if (now && now.slot === record.slot) {
        now.status = "quiesced";
        state.save(now);
      }
    });
    quiesced.push(record.bot);
  }
  return quiesced;
}

/** Starts the browsers `quiesceDesktops` closed, on the same displays. */
export async function resumeDesktops(state: DesktopState, home: string): Promise<string[]> {
  const resumed: string[] = [];
  for (const record of state.records()) {
    if (record.status !== "quiesced") continue;
    await launchBrowser(state, record, home, record.browserProxy);
    record.status = "running";
    state.save(record);
    resumed.push(record.bot);
  }
  return resumed;
}

/**
 * Drops records whose processes are gone (the machine restarted, or a
 * start was cut): a slot of a dead X server can be given out again.
 */
export function reconcile(state: DesktopState): void {
  for (const record of state.records()) {
    const starting = record.status === "starting" && isAlive(record.starter);
    if (starting) continue;
    const dead = !isAlive(record.xserver);
    if (!dead) continue;
    signal(record.browser, "SIGKILL");
    signal(record.windowManager, "SIGKILL");
    signal(record.proxyRelay, "SIGKILL");
    if (isAlive(record.browser) || isAlive(record.windowManager) || isAlive(record.proxyRelay)) continue;
    state.release(record);
    rmSync(state.slotDir(record.slot), { recursive: true, force: true });
  }
}

/**
 * Starts a long-lived process detached from this command: its output goes
 * to a log file (never to the caller's pipes, which would keep the exec
 * open), and it does not carry the exec's kill marker, so it outlives the
 * command that started it.
 */
export function launch(
  dir: string,
  name: string,
  program: string,
  args: string[],
  env: Record<string, string> = {},
): ProcessIdentity {
  const log = openSync(join(dir, `${name}.log`), "w", 0o600);
  const { AGENT_COMPUTER_EXEC: _marker, ...inherited } = process.env;
  const child = spawn(program, args, { detached: true, stdio: ["ignore", log, log], env: { ...inherited, ...env } });
  // The child has its own copy; the resident service lives for days and must not keep one per start.
  closeSync(log);
  child.unref();
  const pid = child.pid;
  const id = pid === undefined ? undefined : identify(pid);
  if (!id) throw new CliError("UNAVAILABLE", `Could not start ${name} (${program}).`);
  return id;
}

function stillRunning(p: ProcessIdentity | undefined, dir: string, name: string): void {
  if (isAlive(p)) return;
  throw new CliError("UNAVAILABLE", `The desktop's ${name} exited during start. ${logTail(dir, name)}`);
}

/** The last lines a desktop process wrote to its log, for an error that says why a start failed. */
function logTail(dir: string, name: string): string {
  try {
    const tail = readFileSync(join(dir, `${name}.log`), "utf8")
      .split("\n")
      .slice(-8)
      .join("\n")
      .trim();
    return tail ? `Its last output:\n${tail}` : "It wrote nothing.";
  } catch {
    return "It has no log.";
  }
}

async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  alive: () => void,
  why: () => string = () => "",
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    alive();
    if (Date.now() > deadline) {
      const detail = why();
      throw new CliError("TIMEOUT", `The desktop did not come up within ${ms / 1000} s.${detail ? ` ${detail}` : ""}`);
    }
    await sleep(100);
  }
}

function x(display: string, program: string, args: string[]): { status: number | null; stdout: string } {
  const r = spawnSync(program, args, { env: { ...process.env, DISPLAY: display }, encoding: "utf8", timeout: 5000 });
  return { status: r.status, stdout: r.stdout ?? "" };
}

const xAnswers = (display: string) => x(display, "xdpyinfo", ["-queryExtensions"]).status === 0;
const windowManagerReady = (display: string) =>
  /window id # 0x/.test(x(display, "xprop", ["-root", "_NET_SUPPORTING_WM_CHECK"]).stdout);
/**
 * What the display shows of the browser's windows and of its window
 * manager, for a start whose window does not become visible: each window
 * of the browser with its map state, whether openbox manages it (has
 * framed it) and the states it carries, the root's desktop properties,
 * and whether openbox and the X server still run and what they wait on.
 */
function windowsOf(display: string, record: DisplaySlotRecord): string {
  const states = browserWindows(display).map((id) => {
    const info = x(display, "xwininfo", ["-id", id]).stdout;
    const tree = x(display, "xwininfo", ["-children", "-id", id]).stdout;
    const framed =
      /Root window id: (0x[0-9a-f]+)/.exec(tree)?.[1] !== /Parent window id: (0x[0-9a-f]+)/.exec(tree)?.[1];
    const props = x(display, "xprop", ["-id", id, "WM_STATE", "_NET_WM_STATE", "_NET_WM_DESKTOP"]).stdout;
    const wmState = /window state: (\w+)/.exec(props)?.[1] ?? "none";
    const netState = /_NET_WM_STATE\(ATOM\) = (.*)/.exec(props)?.[1] ?? "none";
    return `${id} ${/Map State: (\w+)/.exec(info)?.[1] ?? "?"} ${/-geometry (\S+)/.exec(info)?.[1] ?? ""} ${framed ? "managed" : "unmanaged"} WM_STATE ${wmState} _NET_WM_STATE ${netState}`;
  });
  const root = x(display, "xprop", ["-root", "_NET_CURRENT_DESKTOP", "_NET_SHOWING_DESKTOP"])
    .stdout.trim()
    .replace(/\n/g, ", ");
  const stateOf = (name: string, p: ProcessIdentity | undefined) =>
    isAlive(p) ? `${name} ${processState(p?.pid)}` : `${name} not running`;
  const answers = xAnswers(display) ? "answers" : "does not answer";
  return `browser windows: ${states.join(", ") || "none"}; root: ${root}; ${stateOf("window manager", record.windowManager)}; ${stateOf("X server", record.xserver)}, ${answers}`;
}

/** A process's scheduler state and the kernel function it sleeps in, from /proc. */
function processState(pid: number | undefined): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    const wchan = readFileSync(`/proc/${pid}/wchan`, "utf8").trim();
    return `state ${state}${wchan && wchan !== "0" ? ` in ${wchan}` : ""}`;
  } catch {
    return "state unknown";
  }
}

/**
 * Asks again for each of the browser's unmapped windows that is larger
 * than a helper window to be mapped: the window manager gets a new map
 * request and manages (or de-iconifies) it.
 */
function mapAgain(display: string): void {
  for (const id of browserWindows(display)) {
    const info = x(display, "xwininfo", ["-id", id]).stdout;
    const width = Number(/Width: (\d+)/.exec(info)?.[1] ?? 0);
    if (/Map State: IsUnMapped/.test(info) && width > 100) x(display, "xdotool", ["windowmap", id]);
  }
}

const browserWindows = (display: string) =>
  x(display, "xdotool", ["search", "--classname", "chromium"]).stdout.trim().split(/\s+/).filter(Boolean);

const browserWindowShown = (display: string) =>
  x(display, "xdotool", ["search", "--onlyvisible", "--classname", "chromium"]).stdout.trim() !== "";
