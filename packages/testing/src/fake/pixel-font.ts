// A 3x5 pixel font of our own for the fake desktop's frames: upper-case
// letters, digits and common punctuation (lower case is drawn upper case,
// anything else as a box), so a fake screenshot shows the words on it.
// Each glyph is five rows of three bits, the high bit leftmost.

const GLYPHS: Record<string, number[]> = {
  A: [2, 5, 7, 5, 5],
  B: [6, 5, 6, 5, 6],
  C: [3, 4, 4, 4, 3],
  D: [6, 5, 5, 5, 6],
  E: [7, 4, 6, 4, 7],
  F: [7, 4, 6, 4, 4],
  G: [3, 4, 5, 5, 3],
  H: [5, 5, 7, 5, 5],
  I: [7, 2, 2, 2, 7],
  J: [1, 1, 1, 5, 2],
  K: [5, 5, 6, 5, 5],
  L: [4, 4, 4, 4, 7],
  M: [5, 7, 7, 5, 5],
  N: [6, 5, 5, 5, 5],
  O: [2, 5, 5, 5, 2],
  P: [6, 5, 6, 4, 4],
  Q: [2, 5, 5, 6, 3],
  R: [6, 5, 6, 5, 5],
  S: [3, 4, 2, 1, 6],
  T: [7, 2, 2, 2, 2],
  U: [5, 5, 5, 5, 7],
  V: [5, 5, 5, 5, 2],
  W: [5, 5, 7, 7, 5],
  X: [5, 5, 2, 5, 5],
  Y: [5, 5, 2, 2, 2],
  Z: [7, 1, 2, 4, 7],
  "0": [7, 5, 5, 5, 7],
  "1": [2, 6, 2, 2, 7],
  "2": [6, 1, 2, 4, 7],
  "3": [6, 1, 2, 1, 6],
  "4": [5, 5, 7, 1, 1],
  "5": [7, 4, 6, 1, 6],
  "6": [3, 4, 7, 5, 7],
  "7": [7, 1, 1, 2, 2],
  "8": [7, 5, 7, 5, 7],
  "9": [7, 5, 7, 1, 6],
  " ": [0, 0, 0, 0, 0],
  ".": [0, 0, 0, 0, 2],
  ",": [0, 0, 0, 2, 4],
  ":": [0, 2, 0, 2, 0],
  ";": [0, 2, 0, 2, 4],
  "!": [2, 2, 2, 0, 2],
  "?": [6, 1, 2, 0, 2],
  "-": [0, 0, 7, 0, 0],
  _: [0, 0, 0, 0, 7],
  "+": [0, 2, 7, 2, 0],
  "=": [0, 7, 0, 7, 0],
  "/": [1, 1, 2, 4, 4],
  "\\": [4, 4, 2, 1, 1],
  "'": [2, 2, 0, 0, 0],
  '"': [5, 5, 0, 0, 0],
  "(": [1, 2, 2, 2, 1],
  ")": [4, 2, 2, 2, 4],
  "[": [3, 2, 2, 2, 3],
  "]": [6, 2, 2, 2, 6],
  "#": [5, 7, 5, 7, 5],
  "*": [0, 5, 2, 5, 0],
  "<": [1, 2, 4, 2, 1],
  ">": [4, 2, 1, 2, 4],
  "@": [7, 5, 7, 4, 3],
  "%": [5, 1, 2, 4, 5],
  "&": [2, 5, 2, 5, 3],
};
const UNKNOWN = [7, 5, 5, 5, 7];

/** Pixels a character takes across, with its gap, at `scale`. */
export const glyphAdvance = (scale: number) => 4 * scale;
/** Pixels a line takes down, with its gap, at `scale`. */
export const lineAdvance = (scale: number) => 7 * scale;

/**
 * Draws `text` (one line) into 8-bit RGB pixels at (x, y), each font pixel
 * a `scale` x `scale` square; what falls outside the picture is cut.
 */
export function drawText(
  picture: { rgb: Uint8Array; width: number; height: number },
  text: string,
  at: { x: number; y: number; scale: number; colour: readonly [number, number, number] },
): void {
  const { rgb, width, height } = picture;
  for (const [index, character] of [...text].entries()) {
    const rows = GLYPHS[character.toUpperCase()] ?? UNKNOWN;
    const left = at.x + index * glyphAdvance(at.scale);
    if (left >= width) return;
    for (const [row, bits] of rows.entries()) {
      for (let column = 0; column < 3; column++) {
        if (((bits >> (2 - column)) & 1) === 0) continue;
        for (let dy = 0; dy < at.scale; dy++) {
          for (let dx = 0; dx < at.scale; dx++) {
            const px = left + column * at.scale + dx;
            const py = at.y + row * at.scale + dy;
            if (px < width && py < height && px >= 0 && py >= 0) rgb.set(at.colour, (py * width + px) * 3);
          }
        }
      }
    }
  }
}
