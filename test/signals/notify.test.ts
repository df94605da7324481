import { afterAll, describe, expect, it } from 'vitest';
import { type DbHandle, openPostgres } from '../../db/client.ts';
import { eventually } from '../support/engine.ts';

const url = process.env.TEST_DATABASE_URL;
const handles: DbHandle[] = [];
afterAll(async () => {
  await Promise.all(handles.map((h) => h.close()));
});

describe.skipIf(!url)('notifications between processes (Postgres)', () => {
  it("reach every other handle's listeners, never the sender's own: its process woke them already", async () => {
    const channel = `signals_test_${process.pid}`;
    const [sender, other] = [openPostgres(url!), openPostgres(url!)];
    handles.push(sender, other);
    const heard = { sender: 0, other: 0 };
    await sender.signals!.listen(channel, () => heard.sender++);
    await other.signals!.listen(channel, () => heard.other++);

    await sender.signals!.notify(channel);
    await other.signals!.notify(channel);
    await sender.signals!.notify(channel);
    await other.signals!.notify(channel);
    await eventually(async () => (heard.sender >= 2 && heard.other >= 2) || undefined, 5000, 'both notified');
    // Its own would have come within this time as the others' did.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toEqual({ sender: 2, other: 2 });
  });
});
