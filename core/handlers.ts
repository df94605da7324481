import { backupHandlers } from './backups/handlers.ts';
import type { OperationId } from './catalogue.ts';
import type { Handler } from './common/operation.ts';
import { dataFileHandlers } from './data-files/handlers.ts';
import { destinationHandlers } from './destinations/handlers.ts';
import { hostHandlers } from './hosts/handlers.ts';
import { incomingUserHandlers } from './incoming-users/handlers.ts';
import { metadataHandlers } from './metadata/handlers.ts';
import { monitoringHandlers } from './monitoring/handlers.ts';
import { systemHandlers } from './system/handlers.ts';
import { webUserHandlers } from './web-users/handlers.ts';

/** The handler of each catalogue operation, assembled from the features. */
export const handlers: { [K in OperationId]: Handler<K> } = {
  ...systemHandlers,
  ...incomingUserHandlers,
  ...webUserHandlers,
  ...destinationHandlers,
  ...metadataHandlers,
  ...backupHandlers,
  ...hostHandlers,
  ...monitoringHandlers,
  ...dataFileHandlers,
};
