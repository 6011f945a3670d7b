import { readFile } from "node:fs/promises";

/**
 * The Debian mirror this machine's apt already uses: the first `URIs:` of
 * /etc/apt/sources.list.d/debian.sources, else the first non-security `deb`
 * line of /etc/apt/sources.list. Read at run time so no mirror host is ever
 * written into the project.
 */
export async function debianMirrorOfThisMachine(): Promise<string | undefined> {
  const deb822 = await readFile("/etc/apt/sources.list.d/debian.sources", "utf8").catch(() => "");
  const uri = /^URIs:\s*(\S+)/m.exec(deb822)?.[1];
  if (uri) return uri;
  const legacy = await readFile("/etc/apt/sources.list", "utf8").catch(() => "");
  for (const line of legacy.split("\n")) {
    const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)/.exec(line.trim());
    if (match?.[1] && !match[1].includes("security")) return match[1];
  }
  return undefined;
}
