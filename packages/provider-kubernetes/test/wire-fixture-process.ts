/**
 * The wire fixture in a process of its own, as a real API server runs apart
 * from its clients. The benches use it: in the client's process the
 * fixture's relay (TLS, demultiplexing the engine's stream, framing) shares
 * one thread with provider-kubernetes but not with kubectl, which runs in
 * its own process, so a comparison of the two clients through it would
 * charge the server's work to ours alone.
 */
import { type ChildProcess, fork } from "node:child_process";
import type { KubeConfig } from "@kubernetes/client-node";
import Docker from "dockerode";
import { fixtureKubeConfig } from "./fixture-kube-config.js";
import { KubernetesWireFixture } from "./kubernetes-wire-fixture.js";

type Method = "addClaim" | "addForeignPod" | "close";
interface Call {
  id: number;
  method: Method;
  args: unknown[];
}
type Answer = { id: number; error?: string } | { ready: { address: string; token: string } } | { failed: string };

/** The parent's handle on a fixture served by a child process. */
export class WireFixtureProcess {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();

  private constructor(
    private readonly child: ChildProcess,
    readonly address: string,
    readonly token: string,
  ) {
    child.on("message", (answer: Answer) => {
      if (!("id" in answer)) return;
      const call = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      if (answer.error) call?.reject(new Error(`the fixture process failed: ${answer.error}`));
      else call?.resolve();
    });
    child.on("exit", (code) => {
      for (const call of this.waiting.values()) call.reject(new Error(`the fixture process exited (${code})`));
      this.waiting.clear();
    });
  }

  /** Starts a fixture on the default Docker engine (DOCKER_HOST) in a child process, on HTTPS when given `tls`. */
  static start(namespaces: readonly string[], tls?: { key: string; cert: string }): Promise<WireFixtureProcess> {
    // The parent's loader flags (tsx's) let the child run this TypeScript file too.
    const child = fork(new URL(import.meta.url), ["--serve-wire-fixture"], {
      execArgv: process.execArgv,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    return new Promise((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the fixture process exited before it served (${code})`)));
      child.once("message", (answer: Answer) => {
        if ("ready" in answer) resolve(new WireFixtureProcess(child, answer.ready.address, answer.ready.token));
        else reject(new Error(`the fixture process could not start: ${"failed" in answer ? answer.failed : "?"}`));
      });
      child.send({ namespaces, tls });
    });
  }

  kubeConfig(): KubeConfig {
    return fixtureKubeConfig(this.address, this.token);
  }

  addClaim(namespace: string, name: string, hostDir: string): Promise<void> {
    return this.call("addClaim", [namespace, name, hostDir]);
  }

  addForeignPod(namespace: string, name: string, labels: Record<string, string>): Promise<void> {
    return this.call("addForeignPod", [namespace, name, labels]);
  }

  /** Closes the fixture (removing its pods' containers), then the process. */
  async close(): Promise<void> {
    if (this.child.exitCode === null) await this.call("close", []).catch(() => {});
    this.child.disconnect?.();
  }

  private call(method: Method, args: unknown[]): Promise<void> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, method, args } satisfies Call);
    });
  }
}

/** The child's side: serve the fixture, answer the parent's calls, exit when it disconnects. */
function serve(): void {
  let fixture: KubernetesWireFixture | undefined;
  process.on("disconnect", () => {
    void (fixture?.close() ?? Promise.resolve()).finally(() => process.exit(0));
  });
  process.on("message", (message: Call | { namespaces: string[]; tls?: { key: string; cert: string } }) => {
    if (!("id" in message)) {
      fixture = new KubernetesWireFixture(new Docker(), message.namespaces, message.tls);
      fixture.start().then(
        () => process.send?.({ ready: { address: fixture?.address, token: fixture?.token } }),
        (error: Error) => process.send?.({ failed: error.message }),
      );
      return;
    }
    const running = fixture as KubernetesWireFixture;
    const done = (error?: Error) => process.send?.({ id: message.id, error: error?.message });
    try {
      if (message.method === "close") running.close().then(() => done(), done);
      else {
        (running[message.method] as (...args: unknown[]) => void)(...message.args);
        done();
      }
    } catch (error) {
      done(error as Error);
    }
  });
}

if (process.argv.includes("--serve-wire-fixture") && process.send) serve();
