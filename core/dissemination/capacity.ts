/**
 * How many more transfers a destination may start now through one of its hosts. A limit below
 * zero means unlimited, zero blocks, and a limit not set counts as 1 (the reference's default for
 * destinations and hosts alike).
 */
export function freeSlots(limits: {
  destinationMax: number | null;
  destinationRunning: number;
  hostMax: number | null;
  hostRunning: number;
}): number {
  const room = (max: number | null, running: number) => {
    const limit = max ?? 1;
    return limit < 0 ? Number.POSITIVE_INFINITY : Math.max(0, limit - running);
  };
  return Math.min(room(limits.destinationMax, limits.destinationRunning), room(limits.hostMax, limits.hostRunning));
}
