import { posix } from "node:path";
import { AgentComputerError } from "../errors/agent-computer-error.js";

/**
 * Lexical check of a home-relative POSIX path: no NUL, not absolute, and
 * not leaving the home after `..` is resolved. Returns the normalised path
 * ("" for the home itself). Providers must still resolve links inside the
 * machine before using it.
 */
export function normalizeHomePath(path: unknown): string {
  if (typeof path !== "string") {
    throw new AgentComputerError("INVALID_ARGUMENT", "Invalid path: expected a string relative to the home.");
  }
  if (path.includes("\0")) throw new AgentComputerError("INVALID_ARGUMENT", "Invalid path: it contains a NUL byte.");
  if (path.startsWith("/")) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid path "${path}": paths are relative to the home; drop the leading "/".`,
    );
  }
  const normal = posix.normalize(path === "" ? "." : path).replace(/\/+$/, "");
  if (normal === ".." || normal.startsWith("../")) {
    throw new AgentComputerError("INVALID_ARGUMENT", `Invalid path "${path}": it leaves the home.`);
  }
  return normal === "." ? "" : normal;
}
