// The emulator kit: what every hosted service's loopback emulator is built
// on (docs/writing-a-hosted-provider.md). Machines are real containers of
// the computer image; requests and answers are held to the schemas each
// emulator declares from its service's published definition.
export {
  type CollectedExec,
  ComputerContainers,
  demuxEngineStream,
  type ExecOptions,
  type MachineFile,
  type MachineInput,
  type MachineSpec,
  type StartedExec,
  untilEnded,
} from "./computer-containers.js";
export { type FaultRule, FaultRules } from "./fault-rules.js";
export { HttpAnswer, readBody, readJson, sendJson } from "./http-exchange.js";
export { type LoopbackServer, LoopbackServers, listenLoopback } from "./loopback-servers.js";
export {
  type CappedExec,
  type CommandFollower,
  collectCapped,
  type KeptCommand,
  pipeStdout,
  startKept,
} from "./machine-streams.js";
export { parseSingleFilePart, readMultipart, type UploadedPart } from "./multipart.js";
export { ensureFenceImage, FENCE_LABEL, type FenceRules, type FenceSettings, startFence } from "./network-fence.js";
export { forwardPort, type PortTarget, proxyHttp, proxyUpgrade, refuseUpgrade } from "./port-proxy.js";
export {
  type Exchange,
  type RecordedCall,
  type ServiceOperation,
  ServiceRecorder,
  type Violation,
} from "./service-recorder.js";
