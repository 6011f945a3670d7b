/** What `Screens.revoke` did. */
export interface ScreenRevocation {
  /** The capability's id. */
  readonly id: string;
  /** Live sockets of it that were closed. */
  readonly closedConnections: number;
  /**
   * Whether the gateway endpoint was revoked too. Only the process that
   * issued the capability holds the way to; elsewhere the capability is
   * refused here and the endpoint runs out at its expiry.
   */
  readonly endpointRevoked: boolean;
}
