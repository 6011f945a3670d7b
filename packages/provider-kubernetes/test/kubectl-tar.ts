// The fair baseline of home transfer through `pods/exec`: kubectl, the
// client every operator has, running tar in the same pod through the same
// API server (the wire fixture), so the only difference left is the client.
import { spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { KUBECTL } from "./kubectl-access.js";

/** Where kubectl finds the pod: its kubeconfig and namespace arguments, the pod and its container. */
export interface KubectlTarget {
  kubectlArgs: readonly string[];
  pod: string;
  container: string;
}

/** What one kubectl run gave: its exit, stderr, and how many bytes went out through stdout and in through stdin. */
interface KubectlRun {
  status: number | null;
  stderr: string;
  stdoutBytes: number;
  stdinBytes: number;
}

function runKubectl(target: KubectlTarget, command: string[], stdinFile?: string): Promise<KubectlRun> {
  const args = [...target.kubectlArgs, "exec", ...(stdinFile ? ["-i"] : []), target.pod, "-c", target.container];
  const child = spawn(KUBECTL, [...args, "--", ...command], {
    stdio: [stdinFile ? "pipe" : "ignore", "pipe", "pipe"],
  });
  const run: KubectlRun = { status: null, stderr: "", stdoutBytes: 0, stdinBytes: 0 };
  if (!child.stdout || !child.stderr) throw new Error("kubectl was started without its output pipes");
  child.stdout.on("data", (chunk: Buffer) => {
    run.stdoutBytes += chunk.length;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    run.stderr += chunk.toString("utf8");
  });
  if (stdinFile && child.stdin) {
    const source = createReadStream(stdinFile);
    source.on("data", (chunk) => {
      run.stdinBytes += chunk.length;
    });
    child.stdin.on("error", () => {}); // kubectl gone early: its exit status says why
    source.pipe(child.stdin);
  }
  return new Promise((resolve, reject) => {
    child.on("error", (error) => reject(new Error(`kubectl (${KUBECTL}) cannot run: ${error.message}`)));
    child.on("close", (status) => resolve({ ...run, status }));
  });
}

function failed(what: string, run: KubectlRun): Error {
  return new Error(`The kubectl baseline failed to ${what} (exit ${run.status}): ${run.stderr.trim().slice(0, 500)}`);
}

/** `kubectl exec <pod> -- tar -c` of `home`: resolves with the archive's bytes; fails on an error or an empty archive. */
export async function kubectlExportHome(target: KubectlTarget, home: string): Promise<number> {
  const run = await runKubectl(target, ["tar", "-cf", "-", "-C", home, "."]);
  if (run.status !== 0) throw failed(`export ${home}`, run);
  if (run.stdoutBytes === 0) throw failed(`export ${home}: 0 bytes arrived`, run);
  return run.stdoutBytes;
}

/**
 * `kubectl exec -i <pod> -- tar -x` of `tarFile` into a fresh `dir`
 * (the previous one removed first, as an import removes the home it
 * replaces). Fails unless kubectl and tar exit 0 with the whole file sent;
 * the first run also counts, in the pod, that `dir` holds `contentBytes`.
 */
export function kubectlImportHome(
  target: KubectlTarget,
  dir: string,
  tarFile: string,
  contentBytes: number,
): () => Promise<void> {
  let checked = false;
  return async () => {
    const size = (await stat(tarFile)).size;
    const script = 'rm -rf -- "$1" && mkdir -- "$1" && exec tar -xf - -C "$1"';
    const run = await runKubectl(target, ["sh", "-c", script, "kubectl-import", dir], tarFile);
    if (run.status !== 0) throw failed(`import into ${dir}`, run);
    if (run.stdinBytes !== size) throw failed(`import into ${dir}: sent ${run.stdinBytes} of ${size} bytes`, run);
    if (checked) return;
    const sum = "find \"$1\" -type f -printf '%s\\n' | awk '{ s += $1 } END { printf \"%.0f\", s }' >&2";
    const counted = await runKubectl(target, ["sh", "-c", sum, "kubectl-import-check", dir]);
    if (counted.status !== 0 || Number(counted.stderr) !== contentBytes)
      throw failed(
        `import into ${dir}: the pod holds ${counted.stderr.trim() || "nothing"} of ${contentBytes} bytes`,
        counted,
      );
    checked = true;
  };
}
