import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, LeakWatch, startHarness } from "./harness.js";

// The viewer page and the noVNC modules it loads, served by handleRequest.

const watch = new LeakWatch();
let h: Harness;
const NOVNC = "/screens/novnc/1.7.0";

beforeAll(async () => {
  h = await startHarness(watch);
});
afterAll(async () => {
  await h.stop();
});

describe("the viewer page", () => {
  it("is served at <publicPath>/viewer with no-transform, no-store, nosniff, no-referrer and a hash-pinned CSP", async () => {
    expect(h.screens.viewerPath).toBe("/screens/viewer");
    const res = await fetch(h.url("/screens/viewer"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store, no-transform");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    const scripts = [...html.matchAll(/<script type="module">([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    const hash = createHash("sha256").update(scripts[0]!, "utf8").digest("base64");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain(`script-src 'self' 'sha256-${hash}'`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'self'");
  });

  it("deletes window.VideoDecoder before it loads noVNC, and reports to window.parent", async () => {
    const html = await (await fetch(h.url("/screens/viewer"))).text();
    const removal = html.indexOf("delete window.VideoDecoder;");
    expect(removal).toBeGreaterThan(0);
    expect(html.indexOf("await import(config.rfbModule)")).toBeGreaterThan(removal);
    expect(html).not.toMatch(/^\s*import\s/m); // no static import would run before the removal
    expect(html).toContain(`"rfbModule":"${NOVNC}/core/rfb.js"`);
    expect(html).toContain('window.parent.postMessage({ type: "agent-computer-screen", state: next }, "*")');
    expect(html).toContain("location.hash.slice(1)");
  });

  it("answers HEAD, and 405 for other methods", async () => {
    const head = await fetch(h.url("/screens/viewer"), { method: "HEAD" });
    expect(head.status).toBe(200);
    const post = await fetch(h.url("/screens/viewer"), { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("cache-control")).toContain("no-transform");
  });

  it("leaves paths outside publicPath to the app", async () => {
    const res = await fetch(h.url("/elsewhere"));
    expect(await res.text()).toBe("app 404");
  });
});

describe("the noVNC modules", () => {
  it("serves noVNC 1.7.0's whole module graph from the installed package, with no-transform", async () => {
    const seen = new Set<string>();
    const queue = [`${NOVNC}/core/rfb.js`];
    while (queue.length > 0) {
      const path = queue.pop()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const res = await fetch(h.url(path));
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect(res.headers.get("cache-control")).toContain("no-transform");
      const source = await res.text();
      for (const match of source.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/gm)) {
        const target = match[1]!;
        expect(target, `${path} imports ${target}`).toMatch(/^\.\.?\//); // relative only: no bundling needed
        queue.push(new URL(target, `http://x${path}`).pathname);
      }
    }
    expect(seen.size).toBeGreaterThan(30);
    expect([...seen].some((p) => p.includes("/vendor/pako/"))).toBe(true);
  });

  it("refuses everything else under the prefix with 404", async () => {
    for (const path of [
      `${NOVNC}/package.json`,
      `${NOVNC}/core/../package.json`,
      `${NOVNC}/core/%2e%2e/package.json`,
      `${NOVNC}/docs/API.md`,
      `${NOVNC}/core/missing.js`,
      `${NOVNC}/core/.hidden.js`,
      "/screens/novnc/1.6.0/core/rfb.js",
      "/screens/anything",
    ]) {
      const res = await fetch(h.url(path));
      expect(res.status, path).toBe(404);
      expect(res.headers.get("cache-control")).toContain("no-transform");
    }
    expect(h.events.at(-1)).toMatchObject({
      type: "screen.proxy.http_failed",
      status: 404,
      reason: "not_found",
      policy: null,
    });
  });
});
