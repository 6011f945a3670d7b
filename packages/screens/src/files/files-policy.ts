/** Whose files a capability opens: one bot on one computer. */
export interface FilesPolicy {
  readonly computerId: string;
  readonly botId: string;
}
