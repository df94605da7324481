import { restore } from '../backups/handlers.ts';
import type { Backup } from '../backups/schema.ts';
import { generatePassword } from '../common/crypto.ts';
import { importFields } from '../metadata/fields.ts';
import { put as putMetadata } from '../metadata/handlers.ts';
import type { Ports } from '../ports.ts';

/** A small, realistic data set so a fresh embedded install answers with something real. */

/** The demo's pull-only destination, and the incoming user who fetches its files from the portal. */
export const DEMO_PORTAL_DESTINATION = 'PORTAL_DEMO';
export const DEMO_PORTAL_USER = 'demo_reader';
const SITES: Array<[name: string, iso: string, type: number, comment: string]> = [
  ['ARPA_BOLOGNA', 'it', 1, 'Regional weather service, Emilia-Romagna'],
  ['BOM_MELBOURNE', 'au', 1, 'Bureau of Meteorology'],
  ['CMA_BEIJING', 'cn', 2, 'China Meteorological Administration'],
  ['DWD_OFFENBACH', 'de', 2, 'Deutscher Wetterdienst'],
  ['FMI_HELSINKI', 'fi', 1, 'Finnish Meteorological Institute'],
  ['IMO_REYKJAVIK', 'is', 1, 'Icelandic Met Office'],
  ['INM_MADRID', 'es', 1, 'Agencia Estatal de Meteorología'],
  ['JMA_TOKYO', 'jp', 2, 'Japan Meteorological Agency'],
  ['KNMI_DE_BILT', 'nl', 1, 'Royal Netherlands Meteorological Institute'],
  ['METEOFRANCE_TOULOUSE', 'fr', 2, 'Météo-France'],
  ['MO_EXETER', 'gb', 2, 'Met Office'],
  ['OBS_ARCHIVE_IN', 'gb', 0, 'Acquisition of observation archives'],
];

const FIELDS = [
  { name: 'summary', label: 'Summary', type: 'markdown', category: 'General', position: 1, defaultValue: null },
  { name: 'notes', label: 'Operator notes', type: 'textarea', category: 'General', position: 2 },
  { name: 'website', label: 'Web site', type: 'url', category: 'General', position: 3 },
  {
    name: 'service_level',
    label: 'Service level',
    type: 'text',
    category: 'General',
    position: 4,
    defaultValue: 'standard',
  },
  {
    name: 'policy',
    label: 'Data policy',
    type: 'text',
    category: 'General',
    position: 5,
    defaultValue: 'Licence for operational use only',
    editable: false,
  },
  { name: 'primary_contact', label: 'Primary contact', type: 'contact', category: 'Contacts', position: 1 },
  { name: 'ops_mail', label: 'Operations mailing list', type: 'mail-group', category: 'Contacts', position: 2 },
  { name: 'switchboard', label: 'Switchboard', type: 'switchboard', category: 'Contacts', position: 3 },
  {
    name: 'escalation_email',
    label: 'Escalation e-mails',
    type: 'email',
    category: 'Contacts',
    position: 4,
    maxOccurs: -1,
  },
  { name: 'duty_phone', label: 'Duty phone', type: 'phone', category: 'Contacts', position: 5 },
  { name: 'portal_token', label: 'Portal token', type: 'password', category: 'Access', position: 1 },
];

/**
 * The demo's destinations deliver into `deliveredDir/<name>` through a `file` host (primary), with
 * their remote host as a fall-back, so that a put on a fresh install arrives somewhere to look at.
 */
function demoBackup(deliveredDir: string): Backup {
  return {
    ecusers: [
      { name: 'ecpds', uid: 1000, gid: 1000, dir: '/home/ecpds', shell: '/bin/bash', comment: 'Dissemination owner' },
    ],
    methods: [
      {
        name: 'file',
        ectransModuleName: 'file',
        value: null,
        restrict: false,
        resolve: false,
        comment: 'A directory on the data mover',
        active: true,
        ectransModule: { name: 'file', classe: null, archive: null, active: true },
      },
      {
        name: 'sftp',
        ectransModuleName: 'sftp',
        value: null,
        restrict: false,
        resolve: true,
        comment: 'SSH file transfer',
        active: true,
        ectransModule: { name: 'sftp', classe: 'ecmwf.ecpds.sftp.SftpModule', archive: null, active: true },
      },
      {
        name: 'portal',
        ectransModuleName: 'portal',
        value: null,
        restrict: false,
        resolve: false,
        comment: 'Left for the data portal: incoming users fetch the files',
        active: true,
        ectransModule: { name: 'portal', classe: null, archive: null, active: true },
      },
      {
        name: 'ftp',
        ectransModuleName: 'ftp',
        value: null,
        restrict: false,
        resolve: true,
        comment: 'FTP',
        active: true,
        ectransModule: { name: 'ftp', classe: 'ecmwf.ecpds.ftp.FtpModule', archive: null, active: true },
      },
    ],
    destinations: SITES.map(([name, countryIso, type, comment], i) => ({
      destination: {
        name,
        countryIso,
        type,
        comment,
        ecuserName: 'ecpds',
        active: i % 5 !== 4,
        monitor: type === 2,
        backup: false,
        acquisition: type === 0,
        maxConnections: 5,
        retryCount: 3,
        retryFrequency: 60000,
        userMail: `ops@${name.toLowerCase()}.example.org`,
        data: '',
      },
      associations: [
        {
          priority: 0,
          host: {
            hostid: 100 + i + 1,
            nickname: `${name.toLowerCase()}-local`,
            host: 'localhost',
            login: '',
            dir: `${deliveredDir.replace(/\/+$/, '')}/${name}`,
            transferMethodName: 'file',
            type: 'Dissemination',
            ecuserName: 'ecpds',
            active: true,
            maxConnections: 2,
            retryCount: 3,
            retryFrequency: 5000,
            networkName: 'LAN',
            networkCode: 'L',
            data: '',
          },
        },
        {
          priority: 1,
          host: {
            hostid: i + 1,
            nickname: `${name.toLowerCase()}-primary`,
            host: `ftp.${name.toLowerCase().replace(/_/g, '-')}.example.org`,
            login: 'ecpds',
            passwd: `demo-${i + 1}-pw`,
            dir: '/incoming',
            transferMethodName: i % 2 ? 'ftp' : 'sftp',
            type: 'Dissemination',
            ecuserName: 'ecpds',
            active: true,
            networkName: 'Internet',
            networkCode: 'I',
            data: `${i % 2 ? 'ftp' : 'sftp'}.port = "${i % 2 ? 21 : 22}"\n${i % 2 ? 'ftp' : 'sftp'}.timeout = "60000"`,
          },
        },
      ],
    })),
    aliases: [{ aliasFrom: 'MO_EXETER', aliasTo: 'OBS_ARCHIVE_IN' }],
  };
}

/** A pull-only destination: its files are left for the portal's users (a `portal` host). */
function portalDestination(): Backup['destinations'][number] {
  return {
    destination: {
      name: DEMO_PORTAL_DESTINATION,
      countryIso: 'gb',
      type: 1,
      comment: 'Products fetched by their users from the data portal',
      ecuserName: 'ecpds',
      active: true,
      monitor: false,
      backup: false,
      acquisition: false,
      maxConnections: 5,
      retryCount: 3,
      retryFrequency: 60000,
      userMail: 'ops@portal.example.org',
      data: '',
    },
    associations: [
      {
        priority: 0,
        host: {
          hostid: 200,
          nickname: 'data-portal',
          host: 'localhost',
          login: '',
          dir: '',
          transferMethodName: 'portal',
          type: 'Dissemination',
          ecuserName: 'ecpds',
          active: true,
          networkName: 'Internet',
          networkCode: 'I',
          data: '',
        },
      },
    ],
  };
}

/** Loads the demo and starts its active destinations: they send what is put for them. */
export async function loadDemoData(ports: Ports, options: { deliveredDir?: string } = {}) {
  await importFields(ports, 'demo', FIELDS);
  const backup = demoBackup(options.deliveredDir ?? 'data/delivered');
  backup.destinations.push(portalDestination());
  await ports.repos.transaction(async (repos) => {
    await restore({ ports, requestId: 'demo', caller: null }, repos, backup, false);
    for (const { destination } of backup.destinations) {
      if (destination.active) await repos.destinations.setStatus(destination.name, 'WAIT');
    }
  });
  const ctx = { ports, requestId: 'demo', caller: { username: 'demo', showSensitiveInfo: true } };
  for (const [name, , , comment] of SITES) {
    const slug = name.toLowerCase().replace(/_/g, '-');
    await putMetadata({
      ctx,
      input: {
        name,
        body: {
          metadata: {
            General: {
              summary:
                `## ${comment}\n\nReceives **operational** products. ` +
                `See [the portal](https://${slug}.example.org/).`,
              website: `https://${slug}.example.org/`,
              service_level: 'standard',
            },
            Contacts: {
              primary_contact: {
                name: 'Duty officer',
                email: `duty@${slug}.example.org`,
                phone: '+44 118 000 0000',
                fax: null,
              },
              ops_mail: { name: 'Operations', email: `ops@${slug}.example.org` },
              escalation_email: [`head@${slug}.example.org`, `deputy@${slug}.example.org`],
            },
            Access: { portal_token: `token-${slug}` },
          },
          includeInNotes: { General: { summary: true, policy: true }, Contacts: { primary_contact: true } },
        },
      },
    });
  }
  await putMetadata({
    ctx,
    input: {
      name: DEMO_PORTAL_DESTINATION,
      body: {
        metadata: {
          General: {
            summary: '## Data portal\n\nProducts left for their users to fetch from the **data portal**.',
            service_level: 'standard',
          },
        },
        includeInNotes: { General: { summary: true, policy: true } },
      },
    },
  });
}

/**
 * The demo's portal user: standard login with a generated password (sealed, as the API stores it),
 * associated with the pull-only destination and MO_EXETER. Answers the password, to show once.
 */
export async function addDemoPortalUser(ports: Ports): Promise<string> {
  const password = generatePassword();
  const now = ports.clock();
  await ports.repos.transaction(async (repos) => {
    await repos.incomingUsers.insert(
      {
        id: DEMO_PORTAL_USER,
        email: 'reader@example.org',
        iso: 'gb',
        portalService: 'standard-login',
        active: true,
        passwordSealed: await ports.secrets.encrypt(password),
        lastLoginDate: null,
      },
      now,
    );
    for (const destination of [DEMO_PORTAL_DESTINATION, 'MO_EXETER']) {
      await repos.incomingUsers.addAssociation(DEMO_PORTAL_USER, destination);
    }
  });
  return password;
}

/** Demo data goes only into a database that holds nothing yet. */
export async function isEmptyDatabase(ports: Ports) {
  const [destinations, fields, users] = await Promise.all([
    ports.repos.destinations.names(),
    ports.repos.metadata.fields(),
    ports.repos.incomingUsers.list({}),
  ]);
  return destinations.length === 0 && fields.length === 0 && users.length === 0;
}
