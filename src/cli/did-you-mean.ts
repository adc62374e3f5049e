/**
 * "did you mean" for a mistyped command, subcommand, flag or help topic: the known word closest to what was
 * typed, if it is close enough to be what was meant (at most a third of its letters wrong, and at least 1).
 */
export function closest(typed: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const word of known) {
    const d = distance(typed.toLowerCase(), word.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [word, d];
  }
  const allowed = Math.max(1, Math.floor(Math.max(typed.length, 3) / 3));
  return bestDistance <= allowed ? best : undefined;
}

/** " (did you mean 'send'?)", or "" when nothing known is close. */
export function suggest(typed: string, known: readonly string[], prefix = ""): string {
  const word = closest(typed, known);
  return word === undefined ? "" : ` (did you mean '${prefix}${word}'?)`;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of two neighbours. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}
