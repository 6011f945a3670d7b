import type { RestoreLimits } from "./restore-limits.js";
import { refuseOverLimit, refuseRestore, shown } from "./restore-refusal.js";

/** Linux's NAME_MAX: one path segment, in bytes. */
const MAX_NAME_BYTES = 255;

/**
 * A safe home-relative path, or a refusal. Backslashes are ordinary name
 * bytes on Linux, but `..\` and drive prefixes are refused because another
 * tool (or a Windows host) would read them as traversal.
 */
export function checkPath(name: string, bounds: Required<RestoreLimits>): string {
  if (name.includes("\0")) refuseRestore(`the entry name "${shown(name)}" holds a NUL byte`);
  if (Buffer.byteLength(name) > bounds.maxPathLength)
    refuseOverLimit(`the entry path "${shown(name)}" is over ${bounds.maxPathLength} bytes`, {
      limit: "maxPathLength",
    });
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name)) refuseRestore(`"${shown(name)}" is not a relative path`);
  const trimmed = name.endsWith("/") ? name.slice(0, -1) : name;
  const segments = trimmed.split("/");
  for (const segment of segments) {
    if (segment === "" || segment === "." || segment === "..")
      refuseRestore(`"${shown(name)}" has an empty, "." or ".." segment`);
    if (segment.split("\\").some((part) => part === "." || part === ".."))
      refuseRestore(`"${shown(name)}" has a Windows-style ".." or "." segment`);
    if (Buffer.byteLength(segment) > MAX_NAME_BYTES)
      refuseOverLimit(`a name in "${shown(name)}" is over ${MAX_NAME_BYTES} bytes`, { limit: "NAME_MAX" });
  }
  if (segments.length > bounds.maxDepth)
    refuseOverLimit(`"${shown(name)}" is deeper than ${bounds.maxDepth} levels`, { limit: "maxDepth" });
  return trimmed;
}
