export { COMPUTER_LABELS } from "./computer-labels.js";
export { DockerMachine } from "./docker-machine.js";
export { DOCKER_CAPABILITIES, dockerProvider } from "./docker-provider.js";
export { type DockerProviderOptions, dockerProviderOptionsSchema } from "./docker-provider-options.js";
