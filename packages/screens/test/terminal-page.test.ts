import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, LeakWatch, startHarness } from "./harness.js";

// The terminal page and the xterm files it loads, served by handleRequest.

const watch = new LeakWatch();
let h: Harness;
const require = createRequire(import.meta.url);
const xtermRoot = dirname(dirname(require.resolve("@xterm/xterm")));
const fitRoot = dirname(dirname(require.resolve("@xterm/addon-fit")));
const XTERM = JSON.parse(readFileSync(join(xtermRoot, "package.json"), "utf8")).version as string;
const FIT = JSON.parse(readFileSync(join(fitRoot, "package.json"), "utf8")).version as string;

beforeAll(async () => {
  h = await startHarness(watch);
});
afterAll(async () => {
  await h.stop();
});

describe("the terminal page", () => {
  it("is served at <publicPath>/terminal with no-transform, no-store, nosniff, no-referrer and a hash-pinned CSP", async () => {
    expect([XTERM, FIT]).toEqual(["6.0.0", "0.11.0"]);
    const res = await fetch(h.url("/screens/terminal"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store, no-transform");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(inline).toHaveLength(1);
    const hash = createHash("sha256").update(inline[0]!, "utf8").digest("base64");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp.split("; ")).toEqual([
      "default-src 'none'",
      `script-src 'self' 'sha256-${hash}'`,
      "connect-src 'self' ws: wss:",
      "style-src 'self' 'unsafe-inline'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'self'",
    ]);
    // Exactly xterm's UMD build and the fit addon, before the inline script; xterm's stylesheet.
    expect([...html.matchAll(/<script src="([^"]+)"><\/script>/g)].map((m) => m[1])).toEqual([
      `/screens/xterm/xterm-${XTERM}.js`,
      `/screens/xterm/addon-fit-${FIT}.js`,
    ]);
    expect(html.indexOf(`addon-fit-${FIT}.js`)).toBeLessThan(html.indexOf("<script>"));
    expect([...html.matchAll(/<link rel="stylesheet" href="([^"]+)">/g)].map((m) => m[1])).toEqual([
      `/screens/xterm/xterm-${XTERM}.css`,
    ]);
    expect(html).toContain('window.parent.postMessage({ type: "agent-computer-terminal", state: next }, "*")');
    expect(html).toContain('config.publicPath + "/t/" + sealed');
    expect(html).toContain("location.hash.slice(1)");
  });

  it("takes frame-ancestors from viewerFrameAncestors", async () => {
    const other = await startHarness(watch, { viewerFrameAncestors: "https://app.example" });
    try {
      const res = await fetch(other.url("/screens/terminal"));
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors https://app.example");
    } finally {
      await other.stop();
    }
  });

  it("answers HEAD, and 405 for other methods", async () => {
    expect((await fetch(h.url("/screens/terminal"), { method: "HEAD" })).status).toBe(200);
    const post = await fetch(h.url("/screens/terminal"), { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("cache-control")).toContain("no-transform");
  });
});

describe("the xterm files", () => {
  it("serves xterm's UMD script and stylesheet and the fit addon from the installed packages", async () => {
    const files: [string, string, string][] = [
      [`xterm-${XTERM}.js`, join(xtermRoot, "lib/xterm.js"), "text/javascript; charset=utf-8"],
      [`xterm-${XTERM}.css`, join(xtermRoot, "css/xterm.css"), "text/css; charset=utf-8"],
      [`addon-fit-${FIT}.js`, join(fitRoot, "lib/addon-fit.js"), "text/javascript; charset=utf-8"],
    ];
    for (const [name, file, type] of files) {
      const res = await fetch(h.url(`/screens/xterm/${name}`));
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable, no-transform");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(file))).toBe(true);
    }
  });

  it("serves nothing else of either package", async () => {
    for (const path of [
      `/screens/xterm/xterm-${XTERM}.mjs`,
      `/screens/xterm/xterm-${XTERM}.js.map`,
      "/screens/xterm/xterm.js",
      "/screens/xterm/xterm-5.5.0.js",
      `/screens/xterm/addon-fit-${FIT}.mjs`,
      "/screens/xterm/package.json",
      "/screens/xterm/lib/xterm.js",
      "/screens/xterm/%2e%2e/package.json",
      "/screens/xterm/.hidden",
      "/screens/xterm/",
      "/screens/terminal/",
      "/screens/terminal/x",
    ]) {
      const res = await fetch(h.url(path));
      expect(res.status, path).toBe(404);
      expect(res.headers.get("cache-control")).toContain("no-transform");
    }
    expect(h.events.at(-1)).toMatchObject({ type: "screen.proxy.http_failed", reason: "not_found", policy: null });
  });
});
