import type { TransferHistoryEntry, TransferView } from '../dissemination/ports.ts';

/** A dissemination host of a destination as the monitor shows it, in priority order. */
export interface MonitoredHost {
  hostId: string;
  nickname: string | null;
  host: string | null;
  method: string | null;
  active: boolean;
  /** The newest attempt's end on this host for this destination (DONE, or STOP with its error). */
  last: { status: string; at: Date; comment: string | null; error: boolean } | null;
}

/** One destination's line on the monitor. */
export interface DestinationOverview {
  name: string;
  /** As stored: INIT, WAIT, EXEC, HOLD, STOP or FAIL (see shownStatusCode). */
  statusCode: string;
  schedulerStatus: string | null;
  active: boolean;
  comment: string | null;
  /** Its transfers counted per status. */
  counts: Record<string, number>;
  /** Active dissemination hosts, primary first: the ring the movers go round. */
  hosts: Array<Pick<MonitoredHost, 'hostId' | 'nickname' | 'host'>>;
  hostIndex: number;
  lastSuccessAt: Date | null;
  lastErrorAt: Date | null;
  lastError: string | null;
  lastHostId: string | null;
}

export interface DestinationPage {
  /** Exactly this destination. */
  name?: string;
  /** Names after this one, in name order. */
  after?: string;
  /** Names starting with this, case-insensitively. */
  prefix?: string;
  /** Only destinations showing this status code. */
  shown?: string;
  limit: number;
}

export interface TransferPage {
  status?: string;
  /** Transfers with a smaller id: the keyset of the next page. */
  before?: number;
  limit: number;
}

export interface HourOfSending {
  /** The hour's start. */
  hour: Date;
  bytes: number;
  files: number;
}

/** What the console's monitor reads: every list is paged or bounded and served by an index. */
export interface MonitorRepo {
  destinations(page: DestinationPage): Promise<DestinationOverview[]>;
  /** Every host associated with the destination, active or not, with its last result. */
  hostsOf(destination: string): Promise<MonitoredHost[]>;
  /** Newest first, with each transfer's history (oldest change first). */
  transfers(
    destination: string,
    page: TransferPage,
  ): Promise<Array<TransferView & { history: TransferHistoryEntry[] }>>;
  /** Transfers delivered (history DONE) per hour since `since`, hours without any left out. */
  sentPerHour(destination: string, since: Date): Promise<HourOfSending[]>;
}
