import { describe, expect, it } from "vitest";
import { normalizeHomePath } from "./home-path.js";
import { makeProviderRef, providerRefId } from "./provider-ref.js";

describe("ProviderRef", () => {
  it("is <kind>:<id> and gives the id back only to its own kind", () => {
    const ref = makeProviderRef("docker", "abc:def");
    expect(ref).toBe("docker:abc:def");
    expect(providerRefId(ref, "docker")).toBe("abc:def");
    expect(() => providerRefId(ref, "kubernetes")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => providerRefId("docker:", "docker")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => providerRefId(42, "docker")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => makeProviderRef("Bad Kind", "x")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});

describe("normalizeHomePath", () => {
  it("normalises paths inside the home", () => {
    expect(normalizeHomePath("")).toBe("");
    expect(normalizeHomePath("./a//b/")).toBe("a/b");
    expect(normalizeHomePath("a/../b")).toBe("b");
  });

  it.each(["..", "../x", "a/../../x", "/etc/passwd", "a\0b"])("refuses %j", (path) => {
    expect(() => normalizeHomePath(path)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});
