/**
 * Which chunks the reconciler deletes, and which it marks (README "Garbage
 * collection"). The rule that keeps a checkpoint in flight safe:
 *
 * - A checkpoint lists chunks and marks at t0, counts a chunk as stored only
 *   if no mark names it (marked ones it uploads again), and must write its
 *   manifest before t0 + grace/2 or fail.
 * - The reconciler deletes a chunk only when (a) a mark naming it is at
 *   least `grace` old at `now`, taken BEFORE it listed the manifests, (b) no
 *   manifest it then listed (committed or still pending) references it, and
 *   (c) the chunk's own time is strictly before the mark's (else it was
 *   uploaded again after the mark, by a checkpoint that may need it).
 *
 * A checkpoint that reused chunk X saw no mark of X at t0, so any mark of X
 * is younger than t0, and deleting X needs now >= mark + grace > t0 + grace,
 * by when the checkpoint's manifest exists and names X: X is kept. A
 * checkpoint that saw the mark re-uploads X, whose time then follows the
 * mark's (server times are whole seconds: the mark's real time is at least
 * its shown second, so a later upload never shows an earlier second). A
 * new mark is only written for unreferenced chunks no mark names yet.
 */
export interface ChunkCollection {
  readonly deleteChunks: string[];
  readonly deleteMarks: string[];
  /** Unreferenced chunks no mark names yet: the next mark. */
  readonly mark: string[];
}

export function collectChunks(input: {
  chunks: readonly { key: string; name: string; lastModified: number }[];
  marks: readonly { key: string; lastModified: number; names: readonly string[] }[];
  referenced: ReadonlySet<string>;
  now: number;
  graceMs: number;
}): ChunkCollection {
  const ripe = input.marks.filter((m) => input.now - m.lastModified >= input.graceMs);
  const ripeSince = new Map<string, number>();
  const marked = new Set<string>();
  for (const mark of input.marks) for (const name of mark.names) marked.add(name);
  for (const mark of ripe)
    for (const name of mark.names) ripeSince.set(name, Math.max(ripeSince.get(name) ?? 0, mark.lastModified));
  const deleteChunks: string[] = [];
  const mark: string[] = [];
  for (const chunk of input.chunks) {
    if (input.referenced.has(chunk.name)) continue;
    const since = ripeSince.get(chunk.name);
    if (since !== undefined && chunk.lastModified < since) deleteChunks.push(chunk.key);
    else if (!marked.has(chunk.name) || since !== undefined) mark.push(chunk.name);
  }
  return { deleteChunks, deleteMarks: ripe.map((m) => m.key), mark };
}
