export type { BenchCase, BenchSide } from "./bench-case.js";
export { type DesktopBenchTarget, gatewayPidOfContainer, runDesktopBench } from "./desktop-bench.js";
export {
  PROVIDER_BENCH_HOME_BYTES,
  type ProviderBenchMachines,
  type ProviderBenchOptions,
  runProviderBench,
} from "./provider-bench.js";
export { type BenchFigure, type BenchOptions, benchOptionsFromArgv, median, runBench } from "./run-bench.js";
export { type StateStoreBenchOptions, stateStoreBenchCases } from "./state-store-bench-cases.js";
