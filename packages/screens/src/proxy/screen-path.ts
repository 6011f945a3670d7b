import { MAX_SEALED_LENGTH } from "../capability/capability-seal.js";

/** What a request path under `publicPath` names. */
export type ScreenPath =
  | { readonly kind: "outside" }
  | { readonly kind: "invalid" }
  /** `/c/<sealed>` (a screen) or `/t/<sealed>` (a terminal). */
  | { readonly kind: "capability"; readonly route: "screen" | "terminal"; readonly sealed: string }
  | { readonly kind: "viewer" }
  | { readonly kind: "terminal-page" }
  | { readonly kind: "asset"; readonly version: string; readonly file: string }
  /** `/xterm/<name>`: whether `name` is one of the served xterm files is the caller's to say. */
  | { readonly kind: "xterm"; readonly name: string };

/**
 * Reads a request's path (the query is ignored). Anything under
 * `publicPath` that is not exactly one of its routes is "invalid": `..`,
 * percent-encoding, doubled or back slashes and characters outside a small
 * set never reach a route.
 */
export function screenPathOf(url: string | undefined, publicPath: string): ScreenPath {
  if (url === undefined) return { kind: "outside" };
  const path = url.split("?", 1)[0]!;
  if (path !== publicPath && !path.startsWith(`${publicPath}/`)) return { kind: "outside" };
  const rest = path.slice(publicPath.length);
  if (!/^[A-Za-z0-9._~/-]*$/.test(rest) || rest.includes("..") || rest.includes("//")) return { kind: "invalid" };
  const capability = /^\/([ct])\/([A-Za-z0-9_-]+)$/.exec(rest);
  if (capability)
    return capability[2]!.length <= MAX_SEALED_LENGTH
      ? { kind: "capability", route: capability[1] === "t" ? "terminal" : "screen", sealed: capability[2]! }
      : { kind: "invalid" };
  if (rest === "/viewer") return { kind: "viewer" };
  if (rest === "/terminal") return { kind: "terminal-page" };
  const xterm = /^\/xterm\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/.exec(rest);
  if (xterm) return { kind: "xterm", name: xterm[1]! };
  const asset = /^\/novnc\/([0-9A-Za-z.-]+)\/((?:core|vendor)\/[A-Za-z0-9_./-]+\.js)$/.exec(rest);
  if (asset) return { kind: "asset", version: asset[1]!, file: asset[2]! };
  return { kind: "invalid" };
}
