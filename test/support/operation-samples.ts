import type { OperationId } from '../../core/catalogue.ts';

/**
 * One valid, minimal request per catalogue operation, so a test can call every operation and
 * expect it to succeed. Parameters named in the path template fill it; the others go to the
 * query string (or to form fields for form-body operations).
 */
export interface Sample {
  params?: Record<string, string>;
  form?: Record<string, string>;
  body?: unknown;
}

/** What the samples refer to; created by the test before any sample is sent. */
export interface SampleFixture {
  destination: string;
  /** A file under one of the harness's source roots. */
  source: string;
  /** A host associated with `destination`. */
  hostid: number;
  /** Data files registered for `destination`: one to size, one to delete. */
  sizedFile: number;
  deletedFile: number;
  /** Incoming and web users the deleting samples remove. */
  incomingToDelete: string;
  webToDelete: string;
  /** An incoming user associated with `destination`, and one that is not. */
  associated: string;
  unassociated: string;
}

const incomingFields = { email: 'matrix@example.org', iso: 'gb' };

export const operationSamples = (f: SampleFixture): Record<OperationId, Sample> => ({
  version: {},

  incomingUserAdd: { params: { id: 'matrix_add', pass: 'Matrix-pass-1', ...incomingFields } },
  incomingUserAdd2: { params: { id: 'matrix_add2', ...incomingFields } },
  incomingUserList: {},
  incomingUserDel: { params: { id: f.incomingToDelete } },
  incomingCategoryAdd: { params: { id: f.associated }, body: [] },
  incomingAssociationAdd: { params: { id: f.unassociated, destination: f.destination } },
  incomingAssociationDel: { params: { id: f.associated, destination: f.destination } },
  incomingAssociationList: { params: { id: f.associated } },

  webUserAdd: { params: { id: 'matrix.web', pass: 'Matrix-pass-1' } },
  webUserAdd2: { params: { id: 'matrix.web2' } },
  webUserList: {},
  webUserDel: { params: { id: f.webToDelete } },

  destinationList: {},
  destinationGet: { params: { name: f.destination } },
  destinationTypeList: {},
  destinationCountryList: {},
  destinationOption: { form: { destination: f.destination, name: 'scheduler.lifetime', value: '3d' } },

  metadataFields: {},
  metadataGet: { params: { name: f.destination } },
  metadataPut: { params: { name: f.destination }, body: { metadata: {} } },

  backupList: {},
  backupGet: { params: { name: f.destination } },
  backupPut: { body: { backup: { destinations: [] } } },

  hostOption: { form: { hostid: String(f.hostid), name: 'matrix.option', value: 'on' } },

  monitoringSummary: {},
  monitoringSummaryProduct: { params: { product: 'ens' } },
  monitoringSummaryCycle: { params: { product: 'ens', time: '00' } },
  monitoringHistory: { params: { product: 'ens', time: '00', step: '0', type: 'fc' } },

  datafilePut: { params: { destination: f.destination, source: f.source, uniquename: 'matrix-put' } },
  datafileSize: { params: { id: String(f.sizedFile) } },
  datafileDel: { params: { id: String(f.deletedFile) } },
});

/** The URL path of an operation with a sample's parameters: path ones substituted, the rest as query. */
export function samplePath(template: string, sample: Sample): string {
  const query = new URLSearchParams();
  let path = template;
  for (const [name, value] of Object.entries(sample.params ?? {})) {
    const placeholder = `{${name}}`;
    if (path.includes(placeholder)) path = path.replace(placeholder, encodeURIComponent(value));
    else query.set(name, value);
  }
  const rest = query.toString();
  return rest ? `${path}?${rest}` : path;
}
