export { COMPUTER_APP_NAME, COMPUTER_POD_LABELS } from "./computer-pod-labels.js";
export { computerPodManifest } from "./computer-pod-manifest.js";
export { KubernetesMachine } from "./kubernetes-machine.js";
export { KUBERNETES_SANDBOX_ENV, kubernetesOptionsFromEnv } from "./kubernetes-options-from-env.js";
export { KUBERNETES_CAPABILITIES, kubernetesProvider } from "./kubernetes-provider.js";
export {
  type KubernetesProviderOptions,
  kubernetesProviderOptionsSchema,
} from "./kubernetes-provider-options.js";
