/**
 * A host as a request names it, in the form allowlist patterns are written
 * in: lower case, no trailing dot, an IPv6 literal without its brackets.
 */
export function normalizeHost(host: string): string {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  return bare.toLowerCase().replace(/\.$/, "");
}

/**
 * Whether `host` (normalized) matches one of `patterns` (core's
 * `egressHostPatternSchema`): `example.com` is that host only, and
 * `*.github.com` any name under `github.com`, never `github.com` itself.
 */
export function hostMatchesAny(host: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) =>
    pattern.startsWith("*.") ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern,
  );
}

/**
 * Whether a (normalized) host names this machine's loopback, as Chromium's
 * implicit bypass rules count it: `localhost`, `*.localhost`, 127.0.0.0/8
 * and ::1 (desktop-runtime's loopback-proxy.ts takes the same set).
 */
export function isLoopbackHost(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  return /^(0{0,4}:){2,7}0{0,3}1$|^::1$/.test(host);
}
