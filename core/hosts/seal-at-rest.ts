import type { Ports } from '../ports.ts';
import { hasClearSecrets, sealSecretOptions } from './secret-options.ts';

const PAGE = 500;

/**
 * Seals the secret options hosts still hold in clear: written before secret options were sealed,
 * or straight into the table. Node runs it after the migrations, wherever it opens the database;
 * a second run changes nothing, and instances running it at once are safe: each host is read
 * again under its row lock before it is written. Answers how many hosts it sealed.
 */
export async function sealStoredSecretOptions(ports: Ports): Promise<number> {
  let sealed = 0;
  let after = Number.MIN_SAFE_INTEGER;
  for (;;) {
    const page = await ports.repos.hosts.optionTexts(after, PAGE);
    for (const { hostid, data } of page) {
      if (!hasClearSecrets(data)) continue;
      const changed = await ports.repos.transaction(async (repos) => {
        const host = await repos.hosts.find(hostid);
        if (!host || !hasClearSecrets(host.data)) return false;
        await repos.hosts.setData(hostid, await sealSecretOptions(host.data, ports.secrets));
        return true;
      });
      if (changed) sealed++;
    }
    if (page.length < PAGE) return sealed;
    after = page[page.length - 1]!.hostid;
  }
}
