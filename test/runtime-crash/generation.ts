/** 24 MiB whose every byte depends on the generation, so a torn mix of two is detectable. */
export function generationBytes(generation: number): Uint8Array {
  const bytes = new Uint8Array(24 * 1024 * 1024);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + generation * 97) & 0xff;
  return bytes;
}
