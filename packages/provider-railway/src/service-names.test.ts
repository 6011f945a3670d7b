import { COMPUTER_LABELS } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { statusOfErrors } from "./railway-client.js";
import { labelsOfName, serviceNameOf } from "./service-names.js";

const labels = {
  [COMPUTER_LABELS.managed]: "true",
  [COMPUTER_LABELS.computerId]: "c1",
  [COMPUTER_LABELS.homeKey]: "h1",
  [COMPUTER_LABELS.screenLimit]: "3",
};

describe("railway: service names carry labels", () => {
  it("round-trips the screen limit and matches exactly the labels set", () => {
    const name = serviceNameOf(labels);
    expect(name).toMatch(/^ac1-s3(-[0-9a-f]{6}){4}$/);
    const named = labelsOfName(name);
    expect(named?.screenLimit).toBe(3);
    expect(named?.has({ [COMPUTER_LABELS.computerId]: "c1" })).toBe(true);
    expect(named?.has({ [COMPUTER_LABELS.computerId]: "c2" })).toBe(false);
    expect(named?.display).toBe("shared");
  });

  it("round-trips who runs the display", () => {
    const name = serviceNameOf(labels, "second-user");
    expect(name).toMatch(/^ac1-s3u(-[0-9a-f]{6}){4}$/);
    expect(labelsOfName(name)?.display).toBe("second-user");
    expect(labelsOfName(name)?.screenLimit).toBe(3);
  });

  it("keeps to a DNS label, refusing too many labels before anything is made", () => {
    const seven = { ...labels, a: "1", b: "2", c: "3" };
    expect(serviceNameOf({ ...seven, [COMPUTER_LABELS.screenLimit]: "999" }, "second-user").length).toBeLessThanOrEqual(
      63,
    );
    expect(() => serviceNameOf({ ...seven, d: "4" })).toThrow(/at most 7 labels/);
  });

  it("reads no labels from a service it did not name", () => {
    expect(labelsOfName("web")).toBeUndefined();
    expect(labelsOfName("ac1-s0-abcdef")).toBeUndefined(); // no managed label
    expect(labelsOfName(null)).toBeUndefined();
  });
});

describe("railway: what a GraphQL error stands for", () => {
  it("sorts the CLI's messages (src/client.rs) and the rest", () => {
    expect(statusOfErrors("Not Authorized", undefined)).toBe(401);
    expect(statusOfErrors("Project Token not found", undefined)).toBe(401);
    expect(statusOfErrors("Service not found", undefined)).toBe(404);
    expect(statusOfErrors("You are being ratelimited", undefined)).toBe(429);
    expect(statusOfErrors("Problem processing request", undefined)).toBe(500);
    expect(statusOfErrors("Invalid image", undefined)).toBe(400);
  });
});
