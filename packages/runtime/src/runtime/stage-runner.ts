import type { OperationStage } from "./operation-stage.js";

/** Runs one step of an operation, recording it as a stage; bring-up outside operations runs straight through. */
export type StageRunner = <T>(name: OperationStage["name"], work: () => Promise<T>) => Promise<T>;
