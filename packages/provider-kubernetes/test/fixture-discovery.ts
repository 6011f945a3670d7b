import type { Json } from "./fixture-json.js";

/** API discovery, as kubectl reads it before a `get`: core/v1 with pods and pods/exec only. */
export function apiDiscovery(path: string, port: number): Json | undefined {
  if (path === "/api")
    return {
      kind: "APIVersions",
      versions: ["v1"],
      serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: `127.0.0.1:${port}` }],
    };
  if (path === "/apis") return { kind: "APIGroupList", apiVersion: "v1", groups: [] };
  if (path === "/api/v1")
    return {
      kind: "APIResourceList",
      groupVersion: "v1",
      resources: [
        {
          name: "pods",
          singularName: "",
          namespaced: true,
          kind: "Pod",
          verbs: ["create", "delete", "get", "list"],
          shortNames: ["po"],
          categories: ["all"],
        },
        { name: "pods/exec", singularName: "", namespaced: true, kind: "PodExecOptions", verbs: ["create", "get"] },
      ],
    };
  if (path === "/version")
    return { major: "1", minor: "30", gitVersion: "v1.30.0-agent-computer-fixture", platform: "linux/amd64" };
  return undefined;
}
