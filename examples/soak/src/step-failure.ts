/** A step went wrong in `op`, with a stable code (the runtime's, or the harness's own: MISMATCH, ...). */
export class StepFailure extends Error {
  constructor(
    readonly op: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
