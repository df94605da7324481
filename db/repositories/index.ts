import { eq } from 'drizzle-orm';
import type { Repositories } from '../../core/ports.ts';
import type { Database } from '../client.ts';
import { countries, destinations } from '../schema.ts';
import { clientRepo } from './clients.ts';
import { incomingUserRepo } from './incoming-users.ts';
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
    destinations: {
      async exists(name) {
        return (await db.select({ name: destinations.name }).from(destinations).where(eq(destinations.name, name))).length > 0;
      },
    },
    transaction: (work) => db.transaction((tx) => work(createRepositories(tx as unknown as Database))),
  };
}
