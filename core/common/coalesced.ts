/**
 * Requests written together: one that finds none being written is written at once, alone; those
 * that come while a write is on its way go together in the next one, at most `most` at a time. A
 * caller alone waits for nothing more than before, and many share each write's round trips. A
 * write that fails fails each of its requests. `write` answers one result per input, in order.
 */
export function coalesced<I, O>(write: (inputs: I[]) => Promise<O[]>, most: number): (input: I) => Promise<O> {
  let waiting: Array<{ input: I; settle: (result: Promise<O>) => void }> = [];
  let writing = false;

  async function writeWaiting() {
    writing = true;
    while (waiting.length > 0) {
      const group = waiting.slice(0, most);
      waiting = waiting.slice(group.length);
      const written = write(group.map((g) => g.input));
      for (const [i, g] of group.entries()) {
        g.settle(
          written.then((results) => {
            if (i >= results.length) throw new Error('coalesced: a write answered fewer results than inputs');
            return results[i] as O;
          }),
        );
      }
      await written.catch(() => undefined);
    }
    writing = false;
  }

  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, settle: (result) => result.then(resolve, reject) });
      if (!writing) void writeWaiting();
    });
}
