import { describe, expect, it } from 'vitest';
import { dataTimeOf } from '../../../core/wis2/data-time.ts';
import {
  BASIC_SECURITY,
  buildMessage,
  LINK_RELATIONS,
  MAX_MESSAGE_BYTES,
  type MessageInput,
  portalFileUrl,
} from '../../../core/wis2/message.ts';
import { checkWis2Option, wis2Settings } from '../../../core/wis2/options.ts';
import { ConfigError, parseWis2 } from '../../../functions/node/config.ts';

/** The rules of a WIS2 message, its options and its settings, without a broker. */

const input = (over: Partial<MessageInput> = {}): MessageInput => ({
  id: '0b1f7a35-7c1e-4a4f-9d5a-3c5b7c2b9e10',
  kind: 'new',
  file: {
    destination: 'DEST',
    target: 'a/b.txt',
    size: 12,
    modifiedAt: new Date('2026-11-28T10:00:00Z'),
    sha512: 'x'.repeat(88),
  },
  href: 'https://portal.example.org/portal/data/DEST/a/b.txt',
  authenticated: true,
  pubtime: new Date('2026-11-28T10:00:01Z'),
  geometry: null,
  metadataId: null,
  ...over,
});

describe('buildMessage', () => {
  it('makes a WNM with one link of the relation of its kind', () => {
    for (const kind of ['new', 'update', 'deletion'] as const) {
      const built = buildMessage(input({ kind }));
      if (!('json' in built)) throw new Error(built.refused);
      const message = JSON.parse(built.json);
      expect(message).toEqual({
        id: '0b1f7a35-7c1e-4a4f-9d5a-3c5b7c2b9e10',
        conformsTo: ['http://wis.wmo.int/spec/wnm/1/conf/core'],
        type: 'Feature',
        geometry: null,
        properties: {
          data_id: 'DEST/a/b.txt',
          pubtime: '2026-11-28T10:00:01.000Z',
          datetime: '2026-11-28T10:00:00.000Z',
          integrity: { method: 'sha512', value: 'x'.repeat(88) },
        },
        links: [
          {
            href: 'https://portal.example.org/portal/data/DEST/a/b.txt',
            rel: LINK_RELATIONS[kind],
            type: 'text/plain; charset=utf-8',
            length: 12,
            security: BASIC_SECURITY,
          },
        ],
      });
    }
    expect(LINK_RELATIONS).toEqual({
      new: 'canonical',
      update: 'http://def.wmo.int/def/rel/wnm/-/update',
      deletion: 'http://def.wmo.int/def/rel/wnm/-/deletion',
    });
  });

  it('gives no security object to a public link, and leaves out a digest it does not know', () => {
    const built = buildMessage(input({ authenticated: false, file: { ...input().file, sha512: null } }));
    const message = JSON.parse((built as { json: string }).json);
    expect(message.links[0].security).toBeUndefined();
    expect(message.properties.integrity).toBeUndefined();
  });

  it('refuses a message over 8,192 bytes, and takes one of exactly that size', () => {
    const withHref = (pad: number) => buildMessage(input({ href: `https://p.example/${'x'.repeat(pad)}` }));
    const room = MAX_MESSAGE_BYTES - new TextEncoder().encode((withHref(0) as { json: string }).json).length;
    const full = withHref(room);
    expect('json' in full && new TextEncoder().encode(full.json).length).toBe(MAX_MESSAGE_BYTES);
    expect(withHref(room + 1)).toEqual({ refused: expect.stringMatching(/8193 bytes \(at most 8192\)/) });
  });
});

describe("the data's time", () => {
  it('is the datetime of the metadata, or its date and time in UTC, else the registration time', () => {
    expect(dataTimeOf([['datetime', '2026-03-01T06:30:00+01:00']])).toEqual(new Date('2026-03-01T05:30:00Z'));
    expect(dataTimeOf([['datetime', '2026-03-01T06:30']])).toEqual(new Date('2026-03-01T06:30:00Z'));
    expect(
      dataTimeOf([
        ['date', '20260301'],
        ['time', '12'],
      ]),
    ).toEqual(new Date('2026-03-01T12:00:00Z'));
    expect(
      dataTimeOf([
        ['DATE', '20260301'],
        ['time', '0630'],
      ]),
    ).toEqual(new Date('2026-03-01T06:30:00Z'));
    expect(dataTimeOf([['date', '20260301']])).toEqual(new Date('2026-03-01T00:00:00Z'));
    for (const wrong of [
      [['date', '20261332']],
      [
        ['date', '20260301'],
        ['time', '25'],
      ],
      [['datetime', 'soon']],
      [],
    ]) {
      expect(dataTimeOf(wrong as Array<[string, string]>)).toBeNull();
    }
    const at = new Date('2026-03-01T12:00:00Z');
    const built = buildMessage(input({ file: { ...input().file, dataTime: at } }));
    expect(JSON.parse((built as { json: string }).json).properties.datetime).toBe(at.toISOString());
    const plain = buildMessage(input());
    expect(JSON.parse((plain as { json: string }).json).properties.datetime).toBe('2026-11-28T10:00:00.000Z');
  });
});

describe('portalFileUrl', () => {
  it("encodes each segment, and gives an open-access user's public address", () => {
    const file = { destination: 'DE ST', target: 'dir/a b:c%.bin' };
    expect(portalFileUrl('https://p.example', file, null)).toBe(
      'https://p.example/portal/data/DE%20ST/dir/a%20b%3Ac%25.bin',
    );
    expect(portalFileUrl('https://p.example/base', file, 'open user')).toBe(
      'https://p.example/base/portal/home/open%20user/DE%20ST/dir/a%20b%3Ac%25.bin',
    );
  });

  it('has no address for a path the portal does not show', () => {
    for (const target of ['a//b', '../x', 'a/./b', 'tab\there', 'end/']) {
      expect(portalFileUrl('https://p.example', { destination: 'D', target }, null)).toBeNull();
    }
  });
});

describe('WIS2 options of a destination', () => {
  it('reads the topic, the geometry and the metadata id from the options text', () => {
    const data = [
      'incoming.standby = "no"',
      'wis2.topic = "origin/a/wis2/xx-ecpds/data/core/weather"',
      'wis2.geometry = "{\\"type\\":\\"Point\\",\\"coordinates\\":[1,2]}"',
      'wis2.metadataId = "urn:wmo:md:xx-ecpds:obs"',
    ].join('\n');
    expect(wis2Settings(data)).toEqual({
      topic: 'origin/a/wis2/xx-ecpds/data/core/weather',
      geometry: { type: 'Point', coordinates: [1, 2] },
      metadataId: 'urn:wmo:md:xx-ecpds:obs',
    });
    expect(wis2Settings('incoming.standby = "yes"')).toBeNull();
  });

  it('refuses a topic with wildcards or empty levels, and a geometry that is not a point or polygon', () => {
    for (const topic of ['a/+/b', 'a/#', 'a//b', '/a', 'a/', '', 'a/\u0001']) {
      expect(checkWis2Option('wis2.topic', topic)).toMatch(/Invalid value for wis2.topic/);
    }
    expect(checkWis2Option('wis2.topic', 'origin/a/wis2/xx/data/core/weather')).toBeNull();
    for (const geometry of ['{', '{"type":"Point","coordinates":[1]}', '{"type":"LineString","coordinates":[[1,2]]}']) {
      expect(checkWis2Option('wis2.geometry', geometry)).toMatch(/Invalid value for wis2.geometry/);
    }
    expect(checkWis2Option('wis2.other', 'x')).toMatch(/Unknown WIS2 option/);
    expect(wis2Settings('wis2.topic = "a/#"')).toEqual({ invalid: expect.stringMatching(/wis2.topic/) });
  });
});

describe('ECPDS_MQTT_URL and ECPDS_PORTAL_URL', () => {
  it('are read once, the broker shown without its credentials', () => {
    expect(parseWis2(null, null)).toBeNull();
    expect(parseWis2('mqtt://pub:s3cret@broker.example:1884', 'https://data.example.org/')).toEqual({
      mqttUrl: 'mqtt://pub:s3cret@broker.example:1884',
      broker: 'mqtt://broker.example:1884',
      portalUrl: 'https://data.example.org',
    });
    expect(parseWis2('mqtts://broker.example', null)?.broker).toBe('mqtts://broker.example:8883');
  });

  it('refuse what is not a broker or a portal address, never repeating the password', () => {
    for (const url of ['http://broker', 'mqtt://', 'mqtt://u:p@h/path', 'mqtt://:p@h', 'not a url']) {
      expect(() => parseWis2(url, null)).toThrow(ConfigError);
    }
    try {
      parseWis2('mqtt://u:hunter2@h/x', null);
    } catch (e) {
      expect(String(e)).not.toContain('hunter2');
    }
    expect(() => parseWis2('mqtt://h', 'ftp://x')).toThrow(/ECPDS_PORTAL_URL/);
    expect(() => parseWis2('mqtt://h', 'https://u:p@x')).toThrow(/ECPDS_PORTAL_URL/);
  });
});
