import { KubeConfig } from "@kubernetes/client-node";

/** A kubeconfig for the real client: a fixture at `address` (a self-signed certificate, hence skipTLSVerify) with a bearer token. */
export function fixtureKubeConfig(address: string, token: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "fixture", server: address, skipTLSVerify: true }],
    users: [{ name: "fixture", token }],
    contexts: [{ name: "fixture", cluster: "fixture", user: "fixture" }],
    currentContext: "fixture",
  });
  return config;
}
