// biome-ignore lint/suspicious/noExplicitAny: pod JSON as the API shapes it; the fixture reads and writes fields of any kind.
export type Json = Record<string, any>;
