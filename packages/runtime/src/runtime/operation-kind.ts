/**
 * What a computer operation does. `update` rebuilds the machine with the
 * runtime's configured provider and image after saving live work;
 * `recovery` replaces it from the last saved workspace without trusting the
 * old machine; `mode-change` moves one bot between its workspace's Team
 * computer and a Private computer of its own, with its files.
 */
export type OperationKind = "update" | "recovery" | "mode-change";
