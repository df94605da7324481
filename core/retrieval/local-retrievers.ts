import type { LocalRetrievers, PlaceOffering } from './ports.ts';

/** The retrievers of one process, each asked in turn for a free place (see LocalRetrievers). */
export function localRetrievers(): LocalRetrievers {
  const offering = new Set<PlaceOffering>();
  return {
    reserve() {
      for (const retriever of offering) {
        const place = retriever.reserve();
        if (place) return place;
      }
      return null;
    },
    add(retriever) {
      offering.add(retriever);
      return () => void offering.delete(retriever);
    },
  };
}
