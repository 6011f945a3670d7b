/**
 * What a computer operation does. `update` rebuilds the machine with the
 * runtime's configured provider and image after saving live work;
 * `recovery` replaces it from the last saved workspace without trusting the
 * old machine.
 */
export type OperationKind = "update" | "recovery";
