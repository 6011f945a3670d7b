import { describe, expect, it } from "vitest";
import { RfbClientFilter } from "./rfb-client-filter.js";

const handshake = Buffer.concat([Buffer.from("RFB 003.008\n", "latin1"), Buffer.of(1), Buffer.of(1)]);
const setPixelFormat = Buffer.concat([Buffer.of(0, 0, 0, 0), Buffer.alloc(16, 1)]);
const setEncodings = Buffer.of(2, 0, 0, 1, 0, 0, 0, 7);
const update = Buffer.of(3, 1, 0, 0, 0, 0, 4, 0, 3, 0);
const pointer = Buffer.of(5, 1, 0, 10, 0, 20);
const key = Buffer.of(4, 1, 0, 0, 0, 0, 0xff, 0x0d);
const qemuKey = Buffer.of(248, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 0x1e);
const desktopSize = Buffer.concat([Buffer.of(251, 0, 4, 0, 3, 0, 1, 0), Buffer.alloc(16)]);
const xvp = Buffer.of(252, 0, 1, 2);
const fence = Buffer.concat([Buffer.of(250, 0, 0, 0, 0, 0, 0, 1, 3), Buffer.of(9, 9, 9)]);
const cut = (length: number) => {
  const header = Buffer.alloc(8);
  header[0] = 6;
  header.writeInt32BE(length, 4);
  return Buffer.concat([header, Buffer.alloc(Math.abs(length), 0x41)]);
};

/** Feeds `bytes` in pieces of `size` and returns all that was forwarded. */
function run(filter: RfbClientFilter, bytes: Buffer, size: number) {
  const out: Buffer[] = [];
  let dropped = 0;
  for (let i = 0; i < bytes.length; i += size) {
    const result = filter.push(bytes.subarray(i, i + size));
    if (result.violation) return { out: Buffer.concat(out), dropped, violation: result.violation };
    if (result.forward) out.push(result.forward);
    dropped += result.dropped;
  }
  return { out: Buffer.concat(out), dropped, violation: undefined };
}

describe("RfbClientFilter in view mode", () => {
  const input = Buffer.concat([
    handshake,
    setPixelFormat,
    setEncodings,
    pointer,
    update,
    key,
    qemuKey,
    cut(70_000),
    desktopSize,
    xvp,
    fence,
    cut(-12),
    update,
  ]);
  const kept = Buffer.concat([handshake, setPixelFormat, setEncodings, update, fence, update]);

  for (const size of [1, 3, 7, 64, 100_000]) {
    it(`passes what watching needs and drops input, in pieces of ${size}`, () => {
      const filter = new RfbClientFilter("view");
      const { out, dropped, violation } = run(filter, input, size);
      expect(violation).toBeUndefined();
      expect(out).toEqual(kept);
      expect(dropped).toBe(input.length - kept.length);
      expect(filter.clientInitSent).toBe(true);
    });
  }

  it("passes VNC authentication's 16-byte response", () => {
    const auth = Buffer.concat([
      Buffer.from("RFB 003.008\n", "latin1"),
      Buffer.of(2),
      Buffer.alloc(16, 5),
      Buffer.of(1),
      update,
    ]);
    expect(run(new RfbClientFilter("view"), auth, 5).out).toEqual(auth);
  });

  it("closes on what it cannot follow", () => {
    for (const bad of [
      Buffer.from("RFB 003.003\n", "latin1"),
      Buffer.from("GET / HTTP/1.1\r\n", "latin1"),
      Buffer.concat([Buffer.from("RFB 003.008\n", "latin1"), Buffer.of(19)]),
      Buffer.concat([handshake, Buffer.of(7)]),
      Buffer.concat([handshake, Buffer.of(248, 1, 0, 0)]),
    ])
      expect(run(new RfbClientFilter("view"), bad, 4).violation).toBeDefined();
  });
});

describe("RfbClientFilter in control mode", () => {
  it("passes every byte untouched and still sees ClientInit", () => {
    const filter = new RfbClientFilter("control");
    const input = Buffer.concat([handshake, pointer, key, cut(10), xvp]);
    const { out, dropped } = run(filter, input, 5);
    expect(out).toEqual(input);
    expect(dropped).toBe(0);
    expect(filter.clientInitSent).toBe(true);
  });

  it("lets an unknown security type through without following it", () => {
    const filter = new RfbClientFilter("control");
    const input = Buffer.concat([Buffer.from("RFB 003.008\n", "latin1"), Buffer.of(19), Buffer.alloc(40, 3)]);
    expect(run(filter, input, 8).out).toEqual(input);
    expect(filter.clientInitSent).toBe(false);
  });
});
