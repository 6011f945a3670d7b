import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

/** The service's full name, the first half of every call's path. */
export const BOXD_SERVICE = "boxd.api.v1.BoxdApi";

/** The messages of proto/boxd-api.proto as plain objects, fields named as in the proto. */
export type BoxdMessage = Record<string, unknown>;

/**
 * The package's own proto (proto/boxd-api.proto, written from the published
 * definition), read from beside the code: `src/` in the tests and `dist/`
 * when installed are both one folder below it. Parsed with `keepCase`, so a
 * message's fields carry the proto's own names (`vm_id`, `exit_code`).
 */
const root = protobuf.parse(readFileSync(fileURLToPath(new URL("../proto/boxd-api.proto", import.meta.url)), "utf8"), {
  keepCase: true,
}).root;
root.resolveAll();
const service = root.lookupService(BOXD_SERVICE);

/** One rpc of the service as the proto declares it. */
export interface BoxdMethod {
  readonly name: string;
  /** The HTTP/2 path gRPC sends it on. */
  readonly path: string;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

/** The rpcs of proto/boxd-api.proto, by name. */
export const BOXD_METHODS: ReadonlyMap<string, BoxdMethod> = new Map(
  service.methodsArray.map((method) => {
    method.resolve();
    return [
      method.name,
      {
        name: method.name,
        path: `/${BOXD_SERVICE}/${method.name}`,
        requestType: method.resolvedRequestType as protobuf.Type,
        responseType: method.resolvedResponseType as protobuf.Type,
        requestStream: method.requestStream === true,
        responseStream: method.responseStream === true,
      },
    ];
  }),
);

/** The rpc `name`; a name the proto lacks is a programming error. */
export function boxdMethod(name: string): BoxdMethod {
  const method = BOXD_METHODS.get(name);
  if (!method) throw new Error(`proto/boxd-api.proto declares no rpc ${name}`);
  return method;
}

/** A message's bytes on the wire; fields the type does not declare are refused (a typo is caught here). */
export function encodeMessage(type: protobuf.Type, message: BoxdMessage): Buffer {
  const invalid = type.verify(message);
  if (invalid) throw new Error(`${type.name}: ${invalid}`);
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}

/** A message from its bytes, every declared field present (proto3 defaults), 64-bit integers as numbers, bytes as Buffers. */
export function decodeMessage(type: protobuf.Type, bytes: Uint8Array): BoxdMessage {
  const decoded = type.decode(bytes);
  const object = type.toObject(decoded, { longs: Number, defaults: true });
  for (const field of type.fieldsArray) {
    const value = object[field.name];
    if (field.type === "bytes" && value instanceof Uint8Array) object[field.name] = Buffer.from(value);
  }
  return object;
}
