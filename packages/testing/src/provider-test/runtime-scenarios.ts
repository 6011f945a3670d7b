import type { DesktopAction, DesktopSession, Machine } from "@agent-computer/core";
import { expect } from "vitest";
import { SITE, serveFixtureSite } from "./fixture-site.js";

// Scenarios every provider's runtime tests show the same way (the issues'
// "two bots with their own desktops and cookies" and "a machine lost at the
// provider is replaced with its home restored"), so a provider's test file
// says only how its machines are lost.

type PageReader = DesktopSession & {
  display: string;
  evaluateInPage(expression: string | undefined, ctx?: undefined, opts?: { url?: string }): Promise<unknown>;
};

const login = (user: string): DesktopAction[] => [
  { type: "key", keys: "ctrl+l" },
  { type: "type", text: `${SITE}/login.html?user=${user}\n` },
  { type: "wait", ms: 1500 },
];

/** Each bot logs in to the fixture site on its own desktop; each keeps its own cookie. */
export async function expectBotsKeepTheirOwnCookies(machine: Machine, bots = ["alice", "bob"]): Promise<void> {
  await serveFixtureSite(machine);
  const desktops = (await Promise.all(bots.map((bot) => machine.openDesktop?.(bot)))) as PageReader[];
  expect(new Set(desktops.map((d) => d.display)).size).toBe(bots.length);
  const outcomes = await Promise.all(desktops.map((d, i) => d.act(login(bots[i] as string))));
  expect(outcomes.map((o) => o.ok)).toEqual(bots.map(() => true));
  for (const [i, desktop] of desktops.entries()) {
    expect(await desktop.evaluateInPage("document.cookie")).toBe(`session=${bots[i]}`);
  }
  await Promise.all(desktops.map((d) => d.release()));
}

/** After a reconnect: each bot's profile still holds its session. */
export async function expectBotsStillLoggedIn(machine: Machine, bots = ["alice", "bob"]): Promise<void> {
  await serveFixtureSite(machine);
  for (const bot of bots) {
    const desktop = (await machine.openDesktop?.(bot)) as PageReader;
    expect(await desktop.evaluateInPage("document.cookie", undefined, { url: `${SITE}/whoami.html` })).toBe(
      `session=${bot}`,
    );
    await desktop.release();
  }
}

/** What the replacement scenario needs from the test: runs from a fresh runtime each time, on one state and home store. */
export interface ReplacementScenario {
  /** A run of `botId` on `workspaceId` from a new runtime (same provider, state store and home store). */
  startRun(
    workspaceId: string,
    botId: string,
  ): { machine(): Promise<Machine>; end(status: "completed"): Promise<void> };
  /** The runtime events seen so far (their `type`); the scenario clears it between the runs. */
  readonly events: string[];
  /** Loses the machine at the provider (deleted, killed, vanished), as the provider's service would. */
  lose(machine: Machine): Promise<void>;
  /** Machines to destroy when the test ends. */
  readonly owned: Machine[];
}

/** A file written in one run survives the machine being lost: the next run gets a replacement restored from the checkpoint. */
export async function expectLostMachineReplaced(scenario: ReplacementScenario): Promise<void> {
  const workspaceId = `lost-${Date.now()}`;
  const first = scenario.startRun(workspaceId, "alpha");
  const lost = await first.machine();
  scenario.owned.push(lost);
  const bytes = new Uint8Array(70_000).map((_, i) => (i * 7) % 256);
  await lost.files.write("bots/alpha/report.bin", bytes);
  await first.end("completed");
  await scenario.lose(lost);
  scenario.events.length = 0;
  const again = scenario.startRun(workspaceId, "alpha");
  const replacement = await again.machine();
  scenario.owned.push(replacement);
  expect(replacement.ref).not.toBe(lost.ref);
  expect(await replacement.files.read("bots/alpha/report.bin")).toEqual(bytes);
  expect(scenario.events).toEqual(expect.arrayContaining(["provisioning", "restoring", "replaced", "ready"]));
  await again.end("completed");
}
