import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

// The layout a newcomer reads (docs/architecture.md §1): which package may
// depend on which. Production dependencies only; dev dependencies may point
// anywhere (tests of a lower package run on a provider, say).
const root = new URL("../..", import.meta.url).pathname;
const ALLOWED: Record<string, string[]> = {
  core: [],
  leases: ["core"],
  secrets: ["core", "leases"],
  // Egress by policy (issue 53): the rules and the proxy that enforces them, for any provider to run.
  egress: ["core"],
  checkpoint: ["core"],
  "page-browser": ["core"],
  testing: ["core", "leases", "checkpoint", "page-browser"],
  runtime: ["core", "leases", "checkpoint"],
  "desktop-runtime": ["core"],
  screens: ["core", "leases", "runtime"],
  "state-store-sqlite": ["core", "leases"],
  "state-store-postgres": ["core", "leases"],
  "home-store-s3": ["core", "leases", "checkpoint"],
  "provider-docker": ["core", "checkpoint", "desktop-runtime", "egress"],
  // Egress by policy runs the same proxy in the pod (README, "Egress by policy").
  "provider-kubernetes": ["core", "checkpoint", "desktop-runtime", "egress"],
  "provider-host": ["core", "checkpoint", "desktop-runtime"],
  // What every hosted provider shares (docs/writing-a-hosted-provider.md).
  "provider-kit": ["core", "checkpoint", "desktop-runtime"],
  "provider-e2b": ["core", "checkpoint", "desktop-runtime", "provider-kit"],
  "provider-daytona": ["core", "checkpoint", "desktop-runtime", "provider-kit"],
  "provider-box": ["core", "checkpoint", "desktop-runtime", "provider-kit"],
  "provider-createos": ["core", "checkpoint", "desktop-runtime", "provider-kit"],
  "provider-railway": ["core", "desktop-runtime", "provider-kit"],
  "provider-boxd": ["core", "desktop-runtime", "provider-kit"],
  // An installable server: it picks any provider at start (SANDBOX_PROVIDER), keeps its
  // state in SQLite (issue 47), and names the computer image as Docker does (desktop-runtime).
  "mcp-server": [
    "core",
    "leases",
    "checkpoint",
    "runtime",
    "secrets",
    "testing",
    "desktop-runtime",
    "state-store-sqlite",
    "provider-docker",
    "provider-kubernetes",
    "provider-host",
    "provider-e2b",
    "provider-daytona",
    "provider-box",
    "provider-boxd",
    "provider-createos",
    "provider-railway",
  ],
};
const packages = readdirSync(join(root, "packages"));
const manifest = (pkg: string) => JSON.parse(readFileSync(join(root, "packages", pkg, "package.json"), "utf8"));

function shippedFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...shippedFiles(path));
    else if (/\.ts$/.test(name) && !/\.test\.ts$|\.test-helpers\.ts$|\.child\.ts$|crash-child\.ts$/.test(name))
      out.push(path);
  }
  return out;
}

describe("package arrows", () => {
  it("names every package folder", () => {
    expect(packages.sort()).toEqual(Object.keys(ALLOWED).sort());
  });

  for (const pkg of packages) {
    it(`${pkg} depends only on the packages below it`, () => {
      const deps = Object.keys(manifest(pkg).dependencies ?? {})
        .filter((name) => name.startsWith("@agent-computer/"))
        .map((name) => name.slice("@agent-computer/".length));
      expect(deps.filter((dep) => !ALLOWED[pkg]?.includes(dep))).toEqual([]);
    });
  }

  // ipaddr.js for the egress policy's address rules (provider-utils/address-rules.ts), which the egress proxy
  // and the hosted providers that turn a policy into their service's allowlists judge by alike.
  it("core depends on zod and ipaddr.js alone", () => {
    expect(Object.keys(manifest("core").dependencies ?? {})).toEqual(["ipaddr.js", "zod"]);
  });

  it("no shipped file imports a test folder or another package's sources", () => {
    const offenders: string[] = [];
    for (const pkg of packages) {
      for (const folder of ["src", "computer", "bin"]) {
        let files: string[];
        try {
          files = shippedFiles(join(root, "packages", pkg, folder));
        } catch {
          continue;
        }
        for (const file of files) {
          const text = readFileSync(file, "utf8");
          for (const match of text.matchAll(/from\s+"([^"]+)"/g)) {
            const spec = match[1] as string;
            const target = spec.startsWith(".") ? relative(join(root, "packages", pkg), join(dirname(file), spec)) : "";
            const leavesPackage = target.startsWith("..");
            if (/(^|\/)test\//.test(spec) || /(^|\/)test\//.test(target) || leavesPackage)
              offenders.push(`${relative(root, file)}: ${spec}`);
          }
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
