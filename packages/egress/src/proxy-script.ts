import { createRequire } from "node:module";

/**
 * The path of the proxy as one self-contained file for Node 18 or later
 * (`node <path> <config.json>`, proxy-main.ts): what provider-docker mounts
 * into its egress proxy container, which runs the computer image's node.
 */
export function egressProxyScriptPath(): string {
  return createRequire(import.meta.url).resolve("@agent-computer/egress/proxy-server.cjs");
}
