import { MAX_SEALED_LENGTH } from "../capability/capability-seal.js";

/** What a request path under `publicPath` names. */
export type ScreenPath =
  | { readonly kind: "outside" }
  | { readonly kind: "invalid" }
  | { readonly kind: "capability"; readonly sealed: string }
  | { readonly kind: "viewer" }
  | { readonly kind: "asset"; readonly version: string; readonly file: string };

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
  const capability = /^\/c\/([A-Za-z0-9_-]+)$/.exec(rest);
  if (capability)
    return capability[1]!.length <= MAX_SEALED_LENGTH
      ? { kind: "capability", sealed: capability[1]! }
      : { kind: "invalid" };
  if (rest === "/viewer") return { kind: "viewer" };
  const asset = /^\/novnc\/([0-9A-Za-z.-]+)\/((?:core|vendor)\/[A-Za-z0-9_./-]+\.js)$/.exec(rest);
  if (asset) return { kind: "asset", version: asset[1]!, file: asset[2]! };
  return { kind: "invalid" };
}
