import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runProgram } from "./run-program.js";

/** What `scan-background` reports (see image/runtime/bin/scan-background). */
type ScanResult = { status: "ok" | "unknown"; reason?: string } & Record<string, unknown>;

/**
 * `desktop scan-background [args]`: runs the image's python3 scanner (next
 * to this bundle: `/opt/agent-computer/bin/scan-background`) with the same
 * arguments. A missing python3, a crash or unreadable output is `unknown`,
 * never a partial `ok`.
 */
export async function runScanBackground(args: string[], signal?: AbortSignal): Promise<ScanResult> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "..", "bin", "scan-background");
  const cancel = args.includes("--cancel");
  const unknown = (reason: string): ScanResult => ({
    status: "unknown",
    reason,
    ...(cancel ? { signalled: [] } : {}),
  });
  const run = await runProgram("python3", [script, ...args], { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
  if (run.error) {
    const code = (run.error as NodeJS.ErrnoException).code;
    return unknown(code === "ENOENT" ? "python3 is not installed on this computer" : `the scanner failed (${code})`);
  }
  try {
    const result = JSON.parse(run.stdout.toString("utf8").trim().split("\n").at(-1) ?? "") as ScanResult;
    if (result.status === "ok" || result.status === "unknown") return result;
  } catch {
    // Reported below.
  }
  return unknown(`the scanner printed no result (exit ${run.status ?? run.signal})`);
}
