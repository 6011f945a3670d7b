import { createHash } from "node:crypto";

/**
 * The Content-Security-Policy of a page served by screens (the viewer, the
 * terminal): nothing by default, same-origin scripts plus the one inline
 * `script` pinned by its SHA-256, websockets to its own origin, and
 * `frame-ancestors` from the options.
 */
export function pageSecurityPolicy(options: {
  script: string;
  frameAncestors: string;
  styleSrc: string;
  imgSrc?: string;
}): string {
  const hash = createHash("sha256").update(options.script, "utf8").digest("base64");
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    // 'self' covers same-origin websockets in current browsers; ws:/wss:
    // keep older ones working. The only inline script is pinned above.
    "connect-src 'self' ws: wss:",
    ...(options.imgSrc ? [`img-src ${options.imgSrc}`] : []),
    `style-src ${options.styleSrc}`,
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${options.frameAncestors}`,
  ].join("; ");
}

/**
 * `value` as JSON to paste into a page's inline script: every `<` escaped,
 * so a configured string can never close the script element early.
 */
export function inlineScriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}
