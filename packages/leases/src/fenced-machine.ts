import type { DesktopSession, Machine, MachineFiles, OpContext, PageBrowser } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { Lease } from "./lease.js";
import { issuedLease } from "./lease-registry.js";

/**
 * Wraps a `Machine` so every mutating call (exec, file writes and imports,
 * opening or acting on desktops, stop, destroy) first checks `lease` with
 * its engine's `assertCurrent`, and hands the provider the lease in its
 * OpContext. Desktop actions also fail FENCED_OUT while a person controls
 * that bot's screen. Reads (list, read, export, observe, snapshot) pass
 * through unchecked: they change nothing a newer holder relies on.
 *
 * Advisory: a worker paused between the check and the call still acts
 * late. Anything that must never be applied by a stale holder goes through
 * a fenced commit (`commitRevision`).
 */
export function fenced(machine: Machine, lease: Lease): Machine {
  const issued = issuedLease(lease);
  if (!issued) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      'Invalid fenced lease: at "(root)": expected a lease issued by a LeaseEngine (a copy or a hand-made object is refused)',
    );
  }
  const engine = issued.engine;
  const claim = { key: lease.key, token: lease.token };
  const withLease = (ctx?: OpContext): OpContext => ({ ...ctx, lease: claim });
  const check = () => engine.assertCurrent(lease);
  const checkDesktop = (botId: string) => engine.assertCurrent(lease, { desktop: botId });

  const files: MachineFiles = {
    list: (path, ctx, opts) => machine.files.list(path, ctx, opts),
    read: (path, ctx, opts) => machine.files.read(path, ctx, opts),
    exportWorkspace: (ctx) => machine.files.exportWorkspace(ctx),
    write: async (path, data, ctx) => {
      await check();
      return machine.files.write(path, data, withLease(ctx));
    },
    importWorkspace: async (tar, ctx) => {
      await check();
      return machine.files.importWorkspace(tar, withLease(ctx));
    },
  };

  const wrapped: Machine = {
    get ref() {
      return machine.ref;
    },
    get workspacePath() {
      return machine.workspacePath;
    },
    files,
    exec: async (req, ctx) => {
      await check();
      return machine.exec(req, withLease(ctx));
    },
    stop: async (ctx) => {
      await check();
      return machine.stop(withLease(ctx));
    },
    destroy: async (ctx) => {
      await check();
      return machine.destroy(withLease(ctx));
    },
  };
  if (machine.portUrl) {
    const portUrl = machine.portUrl.bind(machine);
    wrapped.portUrl = (port, opts, ctx) => portUrl(port, opts, ctx);
  }
  if (machine.quiesceDesktops) {
    const quiesce = machine.quiesceDesktops.bind(machine);
    wrapped.quiesceDesktops = async (ctx) => {
      await check();
      return quiesce(withLease(ctx));
    };
  }
  if (machine.openDesktop) {
    const open = machine.openDesktop.bind(machine);
    wrapped.openDesktop = async (botId, ctx, opts) => {
      if (lease.kind === "execution" && lease.botId !== botId) {
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          `This execution lease drives bot "${lease.botId}"; open bot "${botId}"'s desktop with that bot's own lease.`,
        );
      }
      await checkDesktop(botId);
      const session = await open(botId, withLease(ctx), opts);
      return fencedDesktop(session, () => checkDesktop(botId), withLease);
    };
  }
  return wrapped;
}

function fencedDesktop(
  session: DesktopSession,
  check: () => Promise<void>,
  withLease: (ctx?: OpContext) => OpContext,
): DesktopSession {
  const wrapped: DesktopSession = {
    get botId() {
      return session.botId;
    },
    get display() {
      return session.display;
    },
    observe: (ctx, opts) => session.observe(ctx, opts),
    act: async (actions, ctx, options) => {
      await check();
      return session.act(actions, withLease(ctx), options);
    },
    // Handing out a capability changes nothing on the screen; the screens
    // package requires the user-control lease for control itself.
    screenEndpoint: (mode, ctx, opts) => session.screenEndpoint(mode, ctx, opts),
    release: async (ctx) => {
      await check();
      return session.release(withLease(ctx));
    },
  };
  if (session.launch) {
    // Opening a window changes the screen: fenced like an action.
    const launch = session.launch.bind(session);
    wrapped.launch = async (argv, ctx) => {
      await check();
      return launch(argv, withLease(ctx));
    };
  }
  if (session.open) {
    const open = session.open.bind(session);
    wrapped.open = async (path, ctx) => {
      await check();
      return open(path, withLease(ctx));
    };
  }
  if (session.terminalEndpoint) {
    const terminal = session.terminalEndpoint.bind(session);
    wrapped.terminalEndpoint = async (ctx, opts) => {
      await check();
      return terminal(withLease(ctx), opts);
    };
  }
  if (session.revokeEndpoint) {
    // Revoking only takes access away: never fenced, so a stale worker can still clean up.
    wrapped.revokeEndpoint = session.revokeEndpoint.bind(session);
  }
  if (session.pageBrowser) {
    const page = session.pageBrowser;
    const browser: PageBrowser = {
      snapshot: (ctx, request) => page.snapshot(ctx, request),
      navigate: async (url, ctx) => {
        await check();
        return page.navigate(url, withLease(ctx));
      },
      act: async (action, ctx, options) => {
        await check();
        return page.act(action, withLease(ctx), options);
      },
    };
    Object.defineProperty(wrapped, "pageBrowser", { value: browser, enumerable: true });
  }
  return wrapped;
}
