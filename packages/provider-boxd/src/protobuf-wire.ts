/**
 * Protobuf's wire format read without a schema: a message's fields as
 * (number, wire type, value). Used where no declaration may be assumed
 * (ListVms's answer, whose fields are not published where we could read
 * them) and by the emulator to find fields a request carries that the
 * definition does not declare.
 */
export interface WireField {
  readonly number: number;
  /** 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit (3 and 4, groups, are refused). */
  readonly wireType: 0 | 1 | 2 | 5;
  /** The varint, or the raw bytes of the other wire types. */
  readonly value: bigint | Buffer;
}

/** The fields of one message, in order; throws on bytes that are not a well-formed message. */
export function readWireFields(bytes: Uint8Array): WireField[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields: WireField[] = [];
  let offset = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (offset >= buffer.length) throw new Error("a varint runs past the message's end");
      const byte = buffer[offset++] as number;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
    }
    throw new Error("a varint is longer than ten bytes");
  };
  const take = (length: number): Buffer => {
    if (offset + length > buffer.length) throw new Error("a field runs past the message's end");
    const slice = buffer.subarray(offset, offset + length);
    offset += length;
    return slice;
  };
  while (offset < buffer.length) {
    const key = varint();
    const number = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (number === 0) throw new Error("field number 0 is not allowed");
    if (wireType === 0) fields.push({ number, wireType, value: varint() });
    else if (wireType === 1) fields.push({ number, wireType, value: take(8) });
    else if (wireType === 2) fields.push({ number, wireType, value: take(Number(varint())) });
    else if (wireType === 5) fields.push({ number, wireType, value: take(4) });
    else throw new Error(`wire type ${wireType} (field ${number}) is not used by proto3`);
  }
  return fields;
}

/** Whether `bytes` read as a well-formed message. */
export function isWireMessage(bytes: Uint8Array): boolean {
  try {
    readWireFields(bytes);
    return true;
  } catch {
    return false;
  }
}
