import { eq, sql } from 'drizzle-orm';
import type { Repositories } from '../../core/ports.ts';
import type { Database } from '../client.ts';
import { countries } from '../schema.ts';
import { acquisitionRepo } from './acquisition.ts';
import { clientRepo } from './clients.ts';
import { consoleRepo } from './console.ts';
import { dataFileRepo } from './data-files.ts';
import { destinationRepo } from './destinations.ts';
import { disseminationRepo } from './dissemination.ts';
import { hostCheckRepo } from './host-checks.ts';
import { hostRepo, referenceRepo } from './hosts.ts';
import { incomingUserRepo } from './incoming-users.ts';
import { mailOutboxRepo } from './mail-outbox.ts';
import { metadataRepo } from './metadata.ts';
import { monitorRepo } from './monitor.ts';
import { monitoringRepo } from './monitoring.ts';
import { portalRepo } from './portal.ts';
import { retentionRepo } from './retention.ts';
import { retrievalRepo } from './retrieval.ts';
import { transferRepo } from './transfers.ts';
import { webUserRepo } from './web-users.ts';

export function createRepositories(db: Database): Repositories {
  return {
    clients: clientRepo(db),
    incomingUsers: incomingUserRepo(db),
    webUsers: webUserRepo(db),
    countries: {
      async exists(iso) {
        return (await db.select({ iso: countries.iso }).from(countries).where(eq(countries.iso, iso))).length > 0;
      },
    },
    destinations: destinationRepo(db),
    hosts: hostRepo(db),
    references: referenceRepo(db),
    metadata: metadataRepo(db),
    monitoring: monitoringRepo(db),
    monitor: monitorRepo(db),
    dataFiles: dataFileRepo(db),
    retrieval: retrievalRepo(db),
    acquisition: acquisitionRepo(db),
    hostChecks: hostCheckRepo(db),
    transfers: transferRepo(db),
    dissemination: disseminationRepo(db),
    console: consoleRepo(db),
    portal: portalRepo(db),
    retention: retentionRepo(db),
    mailOutbox: mailOutboxRepo(db),
    transaction: (work) => db.transaction((tx) => work(createRepositories(tx as unknown as Database))),
    async ping() {
      await db.execute(sql`select 1`);
    },
  };
}
