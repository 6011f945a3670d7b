import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxProvider } from "@agent-computer/core";
import { pixelsOf } from "@agent-computer/testing/provider-test";
import type { Locator, Page } from "playwright-core";

// What the console's browser tests share: the system Chromium, where the
// screenshots go, and the checks of a screenshot's colours.

export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];
export const missingChromium = existsSync(CHROMIUM)
  ? undefined
  : `no Chromium at ${CHROMIUM} (run .ci/chromium-setup.sh)`;
const OUT = join(import.meta.dirname, "..", "..", "..", "out");

/** The page's state colours (src/page/console.css), as the screenshots must show them. */
export const COLOURS = {
  running: [0x15, 0x80, 0x3d],
  controlled: [0x25, 0x63, 0xeb],
  starting: [0xd9, 0x77, 0x06],
  error: [0xdc, 0x26, 0x26],
  noteStarting: [0xff, 0xfb, 0xeb],
  noteEmpty: [0xf1, 0xf5, 0xf9],
  noteError: [0xfe, 0xf2, 0xf2],
} as const;

/** The bots' own pages (what a live screen shows). */
export const BLUE = [20, 120, 220] as const;
export const ORANGE = [230, 120, 20] as const;

/** Saves a screenshot under out/ for people to look at. */
export async function saveShot(name: string, png: Uint8Array): Promise<string> {
  await mkdir(OUT, { recursive: true });
  const path = join(OUT, name);
  await writeFile(path, png);
  return path;
}

/**
 * The share of a box's pixels (sampled every `step` px) within `tolerance`
 * of `colour` in a page screenshot taken at a device scale of 1: a badge is
 * mostly its colour (its words are white), a note mostly its background.
 */
export function shareOf(
  png: Uint8Array,
  box: { x: number; y: number; width: number; height: number },
  colour: readonly number[],
  tolerance: number,
  step = 2,
): number {
  const pixels = pixelsOf(png);
  let matching = 0;
  let samples = 0;
  for (let y = Math.ceil(box.y) + 1; y < box.y + box.height - 1; y += step)
    for (let x = Math.ceil(box.x) + 1; x < box.x + box.width - 1; x += step) {
      samples++;
      const got = pixels.at(x, y);
      if (colour.every((v, i) => Math.abs(v - (got[i] ?? -999)) <= tolerance)) matching++;
    }
  return samples === 0 ? 0 : matching / samples;
}

/** The box of an element in a full-page screenshot (page coordinates, not the viewport's). */
export async function pageBoxOf(locator: Locator): Promise<{ x: number; y: number; width: number; height: number }> {
  const box = await locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    return { x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height };
  });
  if (box.width === 0 || box.height === 0) throw new Error("the element has no box: it is not shown");
  return box;
}

/** How much of the element, in this full-page screenshot, is the colour. */
export async function colourShare(
  png: Uint8Array,
  locator: Locator,
  colour: readonly number[],
  tolerance = 12,
): Promise<number> {
  return shareOf(png, await pageBoxOf(locator), colour, tolerance);
}

/**
 * Everything that would make the page broken for a person: script errors,
 * console errors, and answers of 400 and above (as "<status> <method>
 * <path>", so that a test can allow the refusals it asked for).
 */
export function watchForPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    // A failed load is also a response below, which names its address.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
      errors.push(`console error: ${message.text()}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400)
      errors.push(`${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`);
  });
  return errors;
}

/**
 * A provider that asks `beforeProvision` before it makes a machine: held,
 * the computer stays "starting" as long as a test needs to look at it;
 * thrown, the computer cannot start.
 */
export function gatedProvider(provider: SandboxProvider, beforeProvision: () => Promise<void>): SandboxProvider {
  return {
    specificationVersion: provider.specificationVersion,
    kind: provider.kind,
    capabilities: provider.capabilities,
    provision: async (spec, ctx) => {
      await beforeProvision();
      return provider.provision(spec, ctx);
    },
    reconnect: (ref, ctx) => provider.reconnect(ref, ctx),
    list: (filter, ctx) => provider.list(filter, ctx),
  };
}
