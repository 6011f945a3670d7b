import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { COMPUTER_LABELS, isLabelValue, labelValueOf } from "./labels.js";

// Kubernetes' own rules for a label key: an optional DNS-subdomain prefix, "/", a name of at most 63.
const K8S_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const K8S_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

describe("computer labels", () => {
  it("are Kubernetes label keys of one prefix, each name once", () => {
    const keys = Object.values(COMPUTER_LABELS);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) {
      const [prefix, name, ...rest] = key.split("/");
      expect(rest).toEqual([]);
      expect(prefix).toBe("agent-computer.org");
      expect(prefix).toMatch(K8S_PREFIX);
      expect(name).toMatch(K8S_NAME);
    }
    expect(COMPUTER_LABELS.computerId).toBe("agent-computer.org/computer-id");
    expect(COMPUTER_LABELS.botId).toBe("agent-computer.org/bot-id");
  });

  it("keep a value that is a Kubernetes label value as it is", () => {
    for (const value of ["team-ws1", "private-ws1-alpha", "bot.one", "Shape_Key", "a".repeat(63)]) {
      expect(isLabelValue(value)).toBe(true);
      expect(labelValueOf(value)).toBe(value);
    }
  });

  it("turn any other value into the same short hash everywhere", () => {
    for (const value of [
      "a".repeat(64),
      "bot-",
      "_x",
      "a/b",
      "desk 42",
      `private-${"w".repeat(64)}-${"b".repeat(64)}`,
    ]) {
      expect(isLabelValue(value)).toBe(false);
      const label = labelValueOf(value);
      expect(label).toBe(`sha256-${createHash("sha256").update(value).digest("hex").slice(0, 48)}`);
      expect(isLabelValue(label)).toBe(true);
    }
    expect(labelValueOf("a/b")).not.toBe(labelValueOf("a/c"));
  });
});
