import { describe, expect, it } from "vitest";
import { FramedStream } from "../src/session-framer.js";
import { demuxLog } from "../src/testing/daemon-scripts.js";
import { isBrowserAgent, parsePreviewHost } from "../src/testing/preview-proxy.js";

describe("session framing against the daemon's labelled log", () => {
  const frame = (bytes: string) => `${Buffer.from(bytes).toString("base64")}\n`;

  it("decodes frames split anywhere, and a stray label byte the SDK's demultiplexer let through spoils none", () => {
    const got: Buffer[] = [];
    const stream = new FramedStream((bytes) => got.push(bytes));
    const text = `${frame("hello ")}\x01${frame("world")}\x01\x01=3\n`;
    for (const char of text) stream.push(char);
    expect(Buffer.concat(got).toString()).toBe("hello world");
    expect(stream.exitCode).toBe(3);
  });

  it("reads the end line on each stream (the framer writes one on both)", () => {
    const out = new FramedStream(() => {});
    const err = new FramedStream(() => {});
    err.push("=0\n");
    expect(out.exitCode).toBeUndefined();
    out.push("=0\n");
    expect([out.exitCode, err.exitCode]).toEqual([0, 0]);
  });
});

describe("the emulator's reading of the daemon and the proxy", () => {
  it("splits a labelled log as the daemon's DemuxLogBytes does: bytes before the first label belong to no stream", () => {
    const log = Buffer.from("lost\x01\x01\x01out\n\x02\x02\x02err\n\x01\x01\x01more\n", "latin1");
    const { stdout, stderr } = demuxLog(log);
    expect([stdout.toString(), stderr.toString()]).toEqual(["out\nmore\n", "err\n"]);
  });

  it("parses preview hosts as the proxy's parseHost does", () => {
    expect(parsePreviewHost("6080-abc123.proxy.daytona.test")).toEqual({
      port: 6080,
      idOrToken: "abc123",
      baseHost: "proxy.daytona.test",
    });
    expect(parsePreviewHost("8080-a-b-c.example:443")?.idOrToken).toBe("a-b-c");
    expect(parsePreviewHost("proxy.daytona.test")).toBeUndefined();
    expect(parsePreviewHost("x8080-abc.proxy")).toBeUndefined();
    expect(parsePreviewHost("8080-abc")).toBeUndefined();
  });

  it("takes browsers' user agents as browsers, and Node's fetch and headless Chrome as not", () => {
    expect(isBrowserAgent("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")).toBe(true);
    expect(isBrowserAgent("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 Safari/537.36")).toBe(true);
    expect(isBrowserAgent("node")).toBe(false);
    expect(isBrowserAgent("Mozilla/5.0 HeadlessChrome/131.0 Safari/537.36")).toBe(false);
    expect(isBrowserAgent(undefined)).toBe(false);
  });
});
