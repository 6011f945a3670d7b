import type { Json } from "./fixture-json.js";

// `GET /api/v1/namespaces/{ns}/pods?labelSelector=` in the wire fixture
// (kubernetes-wire-fixture.ts): equality selectors (`k=v`, `k==v`, `k!=v`)
// joined by commas, as the provider's list sends them.

/** The PodList of `namespace`'s pods that `selector` matches. */
export function podList(
  pods: ReadonlyMap<string, { pod: Json }>,
  namespace: string,
  selector: string | null,
  resourceVersion: number,
): Json {
  const wanted = (selector ?? "")
    .split(",")
    .filter(Boolean)
    .map((term) => {
      const [k, v] = term.split(/!?==?/) as [string, string];
      return { k, v, negate: term.includes("!=") };
    });
  const items = [...pods.entries()]
    .filter(([key]) => key.startsWith(`${namespace}/`))
    .map(([, r]) => r.pod)
    .filter((pod) => wanted.every(({ k, v, negate }) => (pod.metadata?.labels?.[k] === v) !== negate));
  return { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: String(resourceVersion) }, items };
}
