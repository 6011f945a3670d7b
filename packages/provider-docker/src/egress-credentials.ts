import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ResolvedEgressPolicy } from "@agent-computer/core";
import { computerCredentialFiles, EGRESS_CA_DIR } from "@agent-computer/egress";
import type Docker from "dockerode";

// Credentials added on the way out, the provider's side (README, "Egress by
// policy"): at provision, a computer whose policy names credentials gets its
// own CA, which signs the proxy's certificate for those hosts and is then
// thrown away (@agent-computer/egress, computer-credential-files.ts); the
// proxy's key and the credentials go to the proxy's files
// (`<dataDir>/egress/credentials`, never mounted into the computer), the
// CA's certificate to the computer, read-only, with the usual variables
// pointing at a bundle that includes it.

/** What a fenced computer with credentials adds to its container and to the proxy's policy file. */
export interface FencedCredentials {
  /** The policy as the network's label keeps it: credentials left out (their values are in the file). */
  readonly labelPolicy: ResolvedEgressPolicy;
  readonly credentialsFile?: string;
  readonly mounts: Docker.MountSettings[];
  readonly env: string[];
}

/** The credentials file's name for a computer's network (one per computer). */
function credentialsFileName(network: string): string {
  return `${network}.json`;
}

/**
 * Writes a fenced computer's credentials file and CA, when its policy has
 * credentials; gives what its container and the proxy's policy file need.
 */
export async function prepareCredentials(
  egressDir: string,
  network: string,
  computerId: string,
  policy: ResolvedEgressPolicy,
): Promise<FencedCredentials> {
  if (policy.credentials.length === 0) return { labelPolicy: policy, mounts: [], env: [] };
  const files = computerCredentialFiles(computerId, policy.credentials);
  const credentialsFile = credentialsFileName(network);
  await mkdir(join(egressDir, "credentials"), { recursive: true, mode: 0o755 });
  // Readable by the proxy's user (nobody) through its read-only mount; the data folder is the operator's.
  await atomicWrite(join(egressDir, "credentials", credentialsFile), files.credentialsFile);
  const caDir = join(egressDir, "ca", network);
  await mkdir(caDir, { recursive: true, mode: 0o755 });
  for (const [name, text] of Object.entries(files.computerFiles)) await atomicWrite(join(caDir, name), text);
  return {
    labelPolicy: { ...policy, credentials: [] },
    credentialsFile,
    mounts: [{ Type: "bind", Source: caDir, Target: EGRESS_CA_DIR, ReadOnly: true }],
    env: [...files.env],
  };
}

/** Removes a computer's credentials file and CA (on destroy, or a failed provision). */
export async function removeCredentials(egressDir: string, network: string): Promise<void> {
  await rm(join(egressDir, "credentials", credentialsFileName(network)), { force: true });
  await rm(join(egressDir, "ca", network), { recursive: true, force: true });
}

async function atomicWrite(file: string, text: string): Promise<void> {
  const written = `${file}.${randomBytes(4).toString("hex")}`;
  await writeFile(written, text, { mode: 0o644 });
  await rename(written, file);
}
