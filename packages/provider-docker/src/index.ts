export { checkDockerHost } from "./check-docker-host.js";
export { COMPUTER_LABELS, DISPLAY_LABELS } from "./computer-labels.js";
export { ISOLATED_BRIDGE_INTERFACE, ISOLATED_NETWORK } from "./computer-network.js";
export type { DockerHostCheck } from "./docker-host-check.js";
export { DockerMachine } from "./docker-machine.js";
export { DOCKER_CAPABILITIES, dockerProvider } from "./docker-provider.js";
export { type DockerProviderOptions, dockerProviderOptionsSchema } from "./docker-provider-options.js";
// The shared egress proxy's container name for a data folder: what an operator removes (`docker rm -f`) when retiring it.
export { egressProxyName } from "./egress-proxy-container.js";
// The computer image's build on this engine (docs/architecture.md §4); its files, tag and sandbox settings are desktop-runtime's.
export { buildComputerImage } from "./image/build-computer-image.js";
export type { BuildComputerImageOptions } from "./image/build-computer-image-options.js";
export type { BuildComputerImageResult } from "./image/build-computer-image-result.js";
export { debianMirrorOfThisMachine } from "./image/debian-mirror.js";
export { BASE_IMAGE, ensureBaseImage } from "./image/ensure-base-image.js";
export type { ImageBuildProgress } from "./image/image-build-progress.js";
export type { ImageBuildStage } from "./image/image-build-stage.js";
