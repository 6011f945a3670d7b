import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** What a program run without blocking gave back. */
export interface ProgramResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The kubectl the suites and benches use: KUBECTL, else the one on the PATH (.ci/kubectl-setup.sh provides one). */
export const KUBECTL = process.env.KUBECTL ?? "kubectl";

/** Runs a program without blocking: the fixture's server answers from this very process. */
export function runProgram(file: string, args: string[]): Promise<ProgramResult> {
  return new Promise((resolve) => {
    execFile(file, args, { encoding: "utf8", timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ status: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

/** A wire fixture kubectl can talk to, and the kubeconfig file that points kubectl at it. */
export interface KubectlFixture<Fixture> {
  fixture: Fixture;
  /** The kubeconfig file, written as an operator would: the server's certificate and the bearer token. */
  configPath: string;
  /** kubectl's arguments that select the fixture and the namespace (a cache folder of its own). */
  kubectlArgs: string[];
}

/** The certificate a fixture serves HTTPS with. */
export type FixtureTls = { key: string; cert: string };

/**
 * Starts a wire fixture (by `start`, in this process or another) on HTTPS,
 * self-signed for 127.0.0.1 (kubectl sends a bearer token only over TLS),
 * and writes a kubeconfig for it into `dir`. This package's client and
 * kubectl can then go through the same server. The caller closes it.
 */
export async function startKubectlFixture<Fixture extends { address: string; token: string }>(
  namespace: string,
  dir: string,
  start: (tls: FixtureTls) => Promise<Fixture>,
): Promise<KubectlFixture<Fixture>> {
  const made = await runProgram("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=127.0.0.1",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    join(dir, "key.pem"),
    "-out",
    join(dir, "cert.pem"),
  ]);
  if (made.status !== 0) throw new Error(`openssl could not make the fixture's certificate: ${made.stderr}`);
  const cert = await readFile(join(dir, "cert.pem"), "utf8");
  const fixture = await start({ key: await readFile(join(dir, "key.pem"), "utf8"), cert });
  const configPath = join(dir, "config");
  await writeFile(
    configPath,
    `apiVersion: v1
kind: Config
clusters: [{ name: fixture, cluster: { server: "${fixture.address}", certificate-authority-data: ${Buffer.from(cert).toString("base64")} } }]
users: [{ name: fixture, user: { token: "${fixture.token}" } }]
contexts: [{ name: fixture, context: { cluster: fixture, user: fixture, namespace: ${namespace} } }]
current-context: fixture
`,
    { mode: 0o600 },
  );
  return {
    fixture,
    configPath,
    kubectlArgs: ["--kubeconfig", configPath, "--cache-dir", join(dir, "cache"), "-n", namespace],
  };
}
