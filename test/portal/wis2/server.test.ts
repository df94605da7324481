import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { LINK_RELATIONS } from '../../../core/wis2/message.ts';
import type { DbHandle } from '../../../db/client.ts';
import { migrate } from '../../../db/migrate.ts';
import { openPglite } from '../../../db/pglite.ts';
import { freshPostgres } from '../../support/database.ts';
import { createHarness } from '../../support/harness.ts';
import { freePort, killAll, removeTempDirs, startServer, tempDir } from '../../support/processes.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, tool } from '../support.ts';
import { expectDownloadMatches, expectValidMessage, setOptions, startMosquitto, subscriber } from './support.ts';

/** `ecpds-edge serve` with ECPDS_MQTT_URL: an upload to its portal is announced on the destination's topic. */
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
const postgres = process.env.TEST_DATABASE_URL;
let broker: Awaited<ReturnType<typeof startMosquitto>> | undefined;
afterAll(async () => {
  await killAll();
  await broker?.close();
  removeTempDirs();
});

describe('ecpds-edge serve with ECPDS_MQTT_URL', () => {
  it(
    "announces an upload with a link to the server's own portal, never logging the broker's password",
    needs('mosquitto', 'curl'),
    async () => {
      broker = await startMosquitto();
      const sub = await subscriber(broker.url);
      const dir = tempDir('ecpds-wis2-serve-');
      const dataDir = path.join(dir, 'data');
      const key = randomBytes(32);
      let handle: DbHandle & { url?: string };
      if (postgres) handle = await freshPostgres(postgres);
      else {
        fs.mkdirSync(dataDir, { recursive: true });
        handle = await openPglite(path.join(dataDir, 'pgdata'));
        await migrate(handle);
      }
      const h = await createHarness({ database: handle, secretKey: new Uint8Array(key) });
      const topic = 'origin/a/wis2/xx-ecpds/data/recommended/weather/served';
      await h.addDestination('DEST');
      await setOptions(h.db, 'DEST', `wis2.topic = "${topic}"`);
      await incomingUser(h, await h.client('admin', ['.*']), { id: 'alice', password: 'Secret-1', grant: ['put'] }, [
        'DEST',
      ]);
      // The server's database stays open until it is dropped (Postgres), or is handed over (PGlite).
      if (!postgres) await h.close();

      const port = await freePort();
      const server = startServer({
        PORT: String(port),
        ECPDS_DATA_DIR: dataDir,
        ECPDS_SECRET_KEY: key.toString('base64'),
        ECPDS_MQTT_URL: broker.url.replace('mqtt://', 'mqtt://publisher:hunter2-secret@'),
        ...(postgres && { DATABASE_URL: handle.url }),
      });
      const url = await server.ready;
      const upload = bytesOf(70_000, 1);
      const local = path.join(dir, 'up.bin');
      fs.writeFileSync(local, upload);
      const put = await tool('curl', [
        '-sSk',
        '-u',
        'alice:Secret-1',
        '-T',
        local,
        `${url}/portal/data/DEST/in/up.bin`,
      ]);
      expect(put.code, put.stderr).toBe(0);

      const [message] = await sub.on(topic, 1);
      const link = expectValidMessage(message!, { topic, dataId: 'DEST/in/up.bin', rel: LINK_RELATIONS.new });
      // The link of the stored version announced (the server retrieves into its store by default).
      expect(link.href).toMatch(
        new RegExp(`^https://127\\.0\\.0\\.1:${port}/portal/data/DEST/in/up\\.bin\\?v=[\\w%-]+$`),
      );
      expect(await expectDownloadMatches(message!, { user: 'alice', password: 'Secret-1' })).toEqual(upload);
      expect(server.logs().find((l) => l.msg === 'WIS2 notifications on')).toMatchObject({
        broker: broker.url,
        portal: url,
      });
      expect(server.output()).not.toContain('hunter2');
      expect(await server.stop()).toBe(true);
      await sub.close();
      if (postgres) await h.close();
    },
  );
});
