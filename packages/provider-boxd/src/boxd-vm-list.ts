import { readWireFields } from "./protobuf-wire.js";

/** One entry of ListVms's answer: the texts it carries (its id, name, status, image, among them). */
export interface ListedVm {
  readonly texts: readonly string[];
}

const PRINTABLE = /^[\x20-\x7e]+$/;

/**
 * The machines in ListVms's answer, read without its field numbers.
 * docs.boxd.sh names the rpc (reference/grpc-api, the full proto), but
 * the wire-exact subset we could read (discobox-ai/vm) leaves its messages
 * out, so this assumes only the usual shape: the answer's entries are
 * embedded messages, one per machine, holding the machine's name as a
 * string field. Each entry's printable strings are returned; the provider
 * keeps the entries with one of its own names and asks GetVm (published)
 * for the facts it acts on.
 */
export function vmsOfListAnswer(answer: Uint8Array): ListedVm[] {
  const entries: ListedVm[] = [];
  for (const field of readWireFields(answer)) {
    if (field.wireType !== 2 || typeof field.value === "bigint") continue;
    let inner: ReturnType<typeof readWireFields>;
    try {
      inner = readWireFields(field.value);
    } catch {
      continue; // a string or bytes field of the answer itself, not an entry
    }
    const texts = inner
      .filter((f) => f.wireType === 2 && typeof f.value !== "bigint")
      .map((f) => (f.value as Buffer).toString("utf8"))
      .filter((text) => PRINTABLE.test(text));
    if (texts.length > 0) entries.push({ texts });
  }
  return entries;
}
