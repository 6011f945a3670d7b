/**
 * Whether the start of a file reads as text: no NUL byte, and valid UTF-8
 * up to a sequence the cap may have cut (at most 3 bytes at the end).
 */
export function previewText(bytes: Uint8Array, cut: boolean): string | undefined {
  if (bytes.includes(0)) return undefined;
  const decoder = new TextDecoder("utf-8", { fatal: true });
  for (let trim = 0; trim <= (cut ? 3 : 0) && trim <= bytes.length; trim++) {
    try {
      return decoder.decode(bytes.subarray(0, bytes.length - trim));
    } catch {
      // try without the last bytes: a character the cap split
    }
  }
  return undefined;
}
