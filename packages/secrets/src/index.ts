export type { SealedSecret } from "./sealed-secret.js";
export type { SecretAddress, SecretInput } from "./secret-inputs.js";
export type { SecretKeyring } from "./secret-keyring.js";
export { type SecretSummary, SecretVault, type SecretVaultOptions } from "./secret-vault.js";
export { type StaticSecret, staticSecretSource } from "./static-secret-source.js";
