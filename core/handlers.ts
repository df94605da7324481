import type { OperationId } from './catalogue.ts';
import type { Handler } from './common/handler.ts';
import * as backups from './backups/handlers.ts';
import * as datafiles from './data-files/handlers.ts';
import * as destinations from './destinations/handlers.ts';
import * as hosts from './hosts/handlers.ts';
import * as metadata from './metadata/handlers.ts';
import * as monitoring from './monitoring/handlers.ts';
import * as incomingUsers from './incoming-users/handlers.ts';
import * as system from './system/handlers.ts';
import * as webUsers from './web-users/handlers.ts';

/** The handler of each catalogue operation. */
export const handlers: { [K in OperationId]: Handler<K> } = {
  version: system.version,
  incomingUserAdd: incomingUsers.add,
  incomingUserAdd2: incomingUsers.add2,
  incomingUserList: incomingUsers.list,
  incomingUserDel: incomingUsers.del,
  incomingCategoryAdd: incomingUsers.addCategories,
  incomingAssociationAdd: incomingUsers.addAssociation,
  incomingAssociationDel: incomingUsers.removeAssociation,
  incomingAssociationList: incomingUsers.listAssociations,
  webUserAdd: webUsers.add,
  webUserAdd2: webUsers.add2,
  webUserList: webUsers.list,
  webUserDel: webUsers.del,
  destinationList: destinations.list,
  destinationGet: destinations.get,
  destinationTypeList: destinations.types,
  destinationCountryList: destinations.countries,
  metadataFields: metadata.fields,
  metadataGet: metadata.get,
  metadataPut: metadata.put,
  backupList: backups.list,
  backupGet: backups.get,
  backupPut: backups.put,
  hostOption: hosts.setHostOption,
  monitoringSummary: monitoring.summary,
  monitoringSummaryProduct: monitoring.summaryProduct,
  monitoringSummaryCycle: monitoring.summaryCycle,
  monitoringHistory: monitoring.history,
  datafilePut: datafiles.put,
  datafileSize: datafiles.size,
  datafileDel: datafiles.del,
};
