/**
 * Waiting work, served fairly across the parties that queued it: each party's items keep their order, and the
 * parties take turns (round robin), so a party that queued a hundred items delays another party's one item by
 * one turn, not by a hundred. A party may be skipped while it is not eligible (it already holds its share of
 * what the items wait for).
 */
export class FairQueue<T> {
  /** Per party, its items oldest first; a Map keeps the parties in the order they take turns. */
  private readonly byParty = new Map<string, T[]>();
  private count = 0;

  constructor(private readonly partyOf: (item: T) => string) {}

  get size(): number {
    return this.count;
  }

  sizeOf(party: string): number {
    return this.byParty.get(party)?.length ?? 0;
  }

  push(item: T): void {
    const party = this.partyOf(item);
    const items = this.byParty.get(party);
    if (items) items.push(item);
    else this.byParty.set(party, [item]);
    this.count++;
  }

  /**
   * Takes the oldest item of the first eligible party in turn order; that party then goes to the back of the
   * line. Undefined when no eligible party has anything queued.
   */
  shift(eligible: (party: string) => boolean = () => true): T | undefined {
    for (const [party, items] of this.byParty) {
      if (!eligible(party)) continue;
      const item = items.shift() as T;
      this.byParty.delete(party);
      if (items.length > 0) this.byParty.set(party, items); // to the back of the line
      this.count--;
      return item;
    }
    return undefined;
  }

  /** Removes an item wherever it waits; false if it was not queued. */
  remove(item: T): boolean {
    const party = this.partyOf(item);
    const items = this.byParty.get(party);
    const i = items?.indexOf(item) ?? -1;
    if (!items || i === -1) return false;
    items.splice(i, 1);
    if (items.length === 0) this.byParty.delete(party);
    this.count--;
    return true;
  }

  /** Empties the queue, returning every item (parties in turn order, each party's items in order). */
  drain(): T[] {
    const out = [...this.byParty.values()].flat();
    this.byParty.clear();
    this.count = 0;
    return out;
  }
}
