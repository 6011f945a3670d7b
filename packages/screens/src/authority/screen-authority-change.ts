/**
 * Something changed that may end live sockets of one bot's screen: the
 * proxy re-checks that screen's control sockets at once instead of at the
 * next periodic check.
 */
export interface ScreenAuthorityChange {
  readonly computerId: string;
  readonly botId: string;
  /** A person's control (the user-control lease) of this screen ended. */
  readonly kind: "control-ended";
}
