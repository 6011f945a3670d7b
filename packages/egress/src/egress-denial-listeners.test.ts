import type { EgressDenial } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { EgressDenialListeners } from "./egress-denial-listeners.js";

const denial = (host: string): EgressDenial => ({ policy: "p", host, port: 80, reason: "not-allowed", at: 1 });

describe("EgressDenialListeners", () => {
  it("hands each denial to the app's option and every watcher, past one that throws, until it unsubscribes", () => {
    const app: string[] = [];
    const watcher: string[] = [];
    const listeners = new EgressDenialListeners((d) => app.push(d.host));
    const stopThrowing = listeners.watch(() => {
      throw new Error("a listener's own failure");
    });
    const stopWatching = listeners.watch((d) => watcher.push(d.host));
    listeners.notify(denial("a.example"));
    expect([app, watcher]).toEqual([["a.example"], ["a.example"]]);
    stopWatching();
    stopThrowing();
    listeners.notify(denial("b.example"));
    expect([app, watcher]).toEqual([["a.example", "b.example"], ["a.example"]]);
  });

  it("keeps the same function watched twice as two subscriptions, each ended on its own", () => {
    const heard: string[] = [];
    const listeners = new EgressDenialListeners();
    const listener = (d: EgressDenial) => heard.push(d.host);
    const first = listeners.watch(listener);
    listeners.watch(listener);
    first();
    listeners.notify(denial("c.example"));
    expect(heard).toEqual(["c.example"]);
  });
});
