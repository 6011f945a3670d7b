import { randomUUID } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { join } from "node:path";
import { type Json, readBody, statusBody } from "./fixture-json.js";

// Secrets in the wire fixture (kubernetes-wire-fixture.ts): create, get and
// delete of core/v1 Secrets as kube-apiserver answers them, the garbage
// collector's deleting of a Secret whose owner pod is gone, and the
// kubelet's secret volumes. Each rule is from the API's published
// definitions (the OpenAPI schema kube-apiserver serves at /openapi/v2):
// - io.k8s.api.core.v1.Secret `data`: "Each key must consist of
//   alphanumeric characters, '-', '_' or '.'. The serialized form of the
//   secret data is a base64 encoded string"; `stringData` is write-only,
//   merged into `data` (the stored object has none); `type` defaults to
//   Opaque; the data's total is at most 1 MiB (the Secrets concept page,
//   kubernetes.io/docs/concepts/configuration/secret, "Individual secrets
//   are limited to 1MiB in size"). A value that is not base64 fails to
//   decode: 400 BadRequest, not 422.
// - io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta `name` (a DNS
//   subdomain) and `ownerReferences` (each with apiVersion, kind, name and
//   uid, all required): "If ALL objects in the list have been deleted,
//   this object will be garbage collected."
// - io.k8s.api.core.v1.SecretVolumeSource: `secretName` required;
//   `items` project the listed keys only ("If a key is specified which is
//   not present in the Secret, the volume setup will error unless it is
//   marked optional"; paths relative, no '..' element, not starting with
//   '..'); `defaultMode` and io.k8s.api.core.v1.KeyToPath `mode` between 0
//   and 0777 (511), default 0644. The kubelet waits to mount a volume whose
//   Secret is missing (the pod stays ContainerCreating) and mounts secret
//   volumes read-only.
// - io.k8s.api.core.v1.PodSecurityContext `fsGroup`: the volume's files
//   get that group; for a read-only volume such as a secret the kubelet ORs
//   the mode with 0440 and sets setgid on folders (kubernetes/kubernetes
//   pkg/volume/volume_linux.go, SetVolumeOwnership). Files are written
//   plainly, not through the kubelet's `..data` symlinks.

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const MAX_SECRET_BYTES = 1024 * 1024;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An answer the REST handler gives: a status code and a body (an object or a Status). */
export interface FixtureAnswer {
  readonly code: number;
  readonly body: Json;
}

export class FixtureSecrets {
  private readonly secrets = new Map<string, Json>();
  /** Every Secret created, in order (namespace/name): a test checks what was made. */
  readonly created: string[] = [];

  constructor(
    private readonly nextResourceVersion: () => string,
    /** Whether a pod of `uid` exists in `namespace` (an owner the garbage collector keeps). */
    private readonly podExists: (namespace: string, uid: string) => boolean,
  ) {}

  /** The Secret as the API server holds it, or undefined. */
  get(namespace: string, name: string): Json | undefined {
    return this.secrets.get(`${namespace}/${name}`);
  }

  /** `POST /api/v1/namespaces/{ns}/secrets`. */
  async create(req: IncomingMessage, namespace: string): Promise<FixtureAnswer> {
    let body: Json;
    try {
      body = JSON.parse(await readBody(req)) as Json;
    } catch (error) {
      return failure(
        400,
        "BadRequest",
        `the body of the request was in an unknown format: ${(error as Error).message}`,
      );
    }
    const name = body.metadata?.name;
    if (body.metadata?.namespace !== undefined && body.metadata.namespace !== namespace)
      return failure(
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    const data: Record<string, string> = { ...(body.data ?? {}) };
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== "string" || value.length % 4 !== 0 || !BASE64.test(value))
        return failure(
          400,
          "BadRequest",
          `Secret in version "v1" cannot be handled as a Secret: illegal base64 data at data[${JSON.stringify(key)}]`,
        );
    }
    for (const [key, value] of Object.entries((body.stringData ?? {}) as Record<string, string>))
      data[key] = Buffer.from(String(value), "utf8").toString("base64");
    const problem = secretProblem(name, data, body.metadata?.ownerReferences);
    if (problem)
      return failure(422, "Invalid", `Secret "${name ?? ""}" is invalid: ${problem}`, { name, kind: "Secret" });
    const key = `${namespace}/${name}`;
    if (this.secrets.has(key))
      return failure(409, "AlreadyExists", `secrets "${name}" already exists`, { name, kind: "secrets" });
    const { stringData: _writeOnly, ...rest } = body;
    const secret: Json = {
      ...rest,
      apiVersion: "v1",
      kind: "Secret",
      type: body.type ?? "Opaque",
      data,
      metadata: {
        ...body.metadata,
        namespace,
        uid: randomUUID(),
        resourceVersion: this.nextResourceVersion(),
        creationTimestamp: new Date().toISOString(),
      },
    };
    this.secrets.set(key, secret);
    this.created.push(key);
    // The garbage collector deletes a dependent whose owners are all gone, also one made after them.
    const owners = (secret.metadata.ownerReferences ?? []) as Json[];
    if (owners.length > 0 && !owners.some((o) => this.podExists(namespace, o.uid))) {
      setTimeout(() => this.secrets.delete(key), 100).unref();
    }
    return { code: 201, body: secret };
  }

  /** `GET` and `DELETE /api/v1/namespaces/{ns}/secrets/{name}`. */
  readOrDelete(method: "GET" | "DELETE", namespace: string, name: string): FixtureAnswer {
    const key = `${namespace}/${name}`;
    const secret = this.secrets.get(key);
    if (!secret) return failure(404, "NotFound", `secrets "${name}" not found`, { name, kind: "secrets" });
    if (method === "DELETE") this.secrets.delete(key);
    return { code: 200, body: secret };
  }

  /** The garbage collector, once the pod of `uid` is gone: its Secrets go (background cascading deletion). */
  collectOwnedBy(namespace: string, uid: string): void {
    for (const [key, secret] of this.secrets) {
      if (!key.startsWith(`${namespace}/`)) continue;
      const owners = (secret.metadata.ownerReferences ?? []) as Json[];
      if (owners.length > 0 && owners.every((o) => o.uid === uid || !this.podExists(namespace, o.uid)))
        this.secrets.delete(key);
    }
  }

  /**
   * Writes the pod's secret volumes into `podDir/<volume>` as the kubelet
   * does, waiting while a Secret (or a key its items name) is missing, as
   * the kubelet retries the mount; false when the pod went meanwhile.
   */
  async materialize(podDir: string, namespace: string, spec: Json, stillWanted: () => boolean): Promise<boolean> {
    const group = spec.securityContext?.fsGroup as number | undefined;
    for (const volume of (spec.volumes ?? []) as Json[]) {
      if (!volume.secret) continue;
      const source = volume.secret as Json;
      let files: { path: string; bytes: Buffer; mode: number }[] | undefined;
      for (;;) {
        if (!stillWanted()) return false;
        files = this.filesOf(namespace, source);
        if (files) break;
        await new Promise((done) => setTimeout(done, 100));
      }
      const dir = join(podDir, volume.name);
      mkdirSync(dir, { recursive: true });
      for (const file of files) {
        const path = join(dir, file.path);
        mkdirSync(join(path, ".."), { recursive: true });
        writeFileSync(path, file.bytes);
        chownSync(path, 0, group ?? 0);
        chmodSync(path, group === undefined ? file.mode : file.mode | 0o440);
      }
      chownSync(dir, 0, group ?? 0);
      chmodSync(dir, group === undefined ? 0o755 : 0o2755);
    }
    return true;
  }

  /** The files a secret volume holds, or undefined while its Secret or a named key is missing. */
  private filesOf(namespace: string, source: Json): { path: string; bytes: Buffer; mode: number }[] | undefined {
    const secret = this.secrets.get(`${namespace}/${source.secretName}`);
    if (!secret) return source.optional === true ? [] : undefined;
    const data = (secret.data ?? {}) as Record<string, string>;
    const mode = (source.defaultMode as number | undefined) ?? 0o644;
    const items = (source.items as Json[] | undefined) ?? Object.keys(data).map((key): Json => ({ key, path: key }));
    const files = [];
    for (const item of items) {
      const value = data[item.key];
      if (value === undefined) {
        if (source.optional === true) continue;
        return undefined;
      }
      files.push({
        path: item.path as string,
        bytes: Buffer.from(value, "base64"),
        mode: (item.mode as number | undefined) ?? mode,
      });
    }
    return files;
  }
}

/** What kube-apiserver refuses of a Secret (422), as `<path>: <reason>`, or undefined. */
function secretProblem(name: unknown, data: Record<string, string>, owners: unknown): string | undefined {
  if (typeof name !== "string" || name.length === 0)
    return "metadata.name: Required value: name or generateName is required";
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    return `metadata.name: Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain`;
  let total = 0;
  for (const [key, value] of Object.entries(data)) {
    if (key.length > 253 || !CONFIG_KEY.test(key) || key === "." || key === "..")
      return `data[${key}]: Invalid value: ${JSON.stringify(key)}: a valid config key must consist of alphanumeric characters, '-', '_' or '.'`;
    total += Buffer.from(value, "base64").length;
  }
  if (total > MAX_SECRET_BYTES) return `data: Too long: must have at most ${MAX_SECRET_BYTES} bytes`;
  for (const [i, owner] of ((owners ?? []) as Json[]).entries()) {
    for (const field of ["apiVersion", "kind", "name", "uid"]) {
      if (typeof owner?.[field] !== "string" || owner[field].length === 0)
        return `metadata.ownerReferences[${i}].${field}: Invalid value: "": ${field} must not be empty`;
    }
  }
  return undefined;
}

function failure(code: number, reason: string, message: string, details?: Json): FixtureAnswer {
  return { code, body: statusBody(code, reason, message, details) };
}
