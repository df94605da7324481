/**
 * What the movers of one process have done since it started, for /metrics: bytes sent and
 * attempts per host, failures per host, and transfers reclaimed from lost movers.
 */
export interface EngineStats {
  delivered(hostId: string, bytes: number): void;
  failed(hostId: string): void;
  reclaimed(count: number): void;
  snapshot(): {
    bytesSent: ReadonlyMap<string, number>;
    delivered: ReadonlyMap<string, number>;
    failures: ReadonlyMap<string, number>;
    reclaims: number;
  };
}

export function createEngineStats(): EngineStats {
  const bytesSent = new Map<string, number>();
  const delivered = new Map<string, number>();
  const failures = new Map<string, number>();
  let reclaims = 0;
  const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);
  return {
    delivered(hostId, bytes) {
      add(bytesSent, hostId, bytes);
      add(delivered, hostId, 1);
    },
    failed: (hostId) => void add(failures, hostId, 1),
    reclaimed(count) {
      reclaims += count;
    },
    snapshot: () => ({ bytesSent, delivered, failures, reclaims }),
  };
}
