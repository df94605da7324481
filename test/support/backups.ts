/** A dissemination host for `destinationBackup`: its method's module name and the fields that matter. */
export interface TestHost {
  method: 'file' | 'test' | 'sftp' | 'ftp' | 'ftps' | 's3' | 'http' | 'r2' | 'portal' | 'azure' | 'webdav';
  host?: string;
  login?: string;
  passwd?: string;
  dir?: string;
  data?: string;
  maxConnections?: number;
  retryCount?: number;
  retryFrequency?: number;
  networkName?: string;
  networkCode?: string;
  filterName?: string;
  nickname?: string;
  /** `Dissemination` when left out; `Source` for a destination's Source host, `Acquisition` for one listed. */
  type?: string;
  /** An Acquisition host's time between runs, in ms. */
  acquisitionFrequency?: number;
  /** Host checks (core/host-checks): on, every `checkFrequency` ms, writing and removing `checkFilename`. */
  check?: boolean;
  checkFrequency?: number;
  checkFilename?: string;
}

let hostids = 5000;
const methodEntry = (name: string) => ({
  name,
  ectransModuleName: name,
  value: null,
  restrict: false,
  resolve: false,
  comment: null,
  active: true,
  ectransModule: { name, classe: null, archive: null, active: true },
});

/**
 * The body of a `PUT /v1/destination/backup` that restores one destination with its dissemination
 * hosts, primary first. Host ids come from `nextHostId`: a suite sharing its database with others
 * passes its own range.
 */
export function destinationBackup(
  name: string,
  hosts: TestHost[],
  options: { destination?: Record<string, unknown>; nextHostId?: () => number } = {},
) {
  const nextHostId = options.nextHostId ?? (() => ++hostids);
  const methods = [...new Set(hosts.map((x) => x.method))].map(methodEntry);
  const associations = hosts.map(({ method, ...fields }, priority) => ({
    priority,
    host: {
      hostid: nextHostId(),
      nickname: `${name.toLowerCase()}-${priority}`,
      host: 'localhost',
      login: '',
      passwd: null,
      dir: '',
      data: '',
      type: 'Dissemination',
      active: true,
      networkName: 'Internet',
      networkCode: 'I',
      transferMethodName: method,
      maxConnections: -1,
      ...fields,
    },
  }));
  const destination = { name, countryIso: 'gb', type: 1, maxConnections: -1, ...options.destination };
  return { backup: { destinations: [{ destination, associations }], methods } };
}
