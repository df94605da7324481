import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const stamp = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const created = () => stamp('created_at').notNull().defaultNow();
const updated = () => stamp('updated_at').notNull().defaultNow();

export const apiClients = pgTable('api_clients', {
  username: text('username').primaryKey(),
  secretHash: text('secret_hash').notNull(),
  permissions: text('permissions').array().notNull().default(sql`'{}'::text[]`),
  origin: text('origin').notNull(),
  createdAt: created(),
  updatedAt: updated(),
  lastUsedAt: stamp('last_used_at'),
});

export const countries = pgTable('countries', {
  iso: text('iso').primaryKey(),
  name: text('name').notNull(),
});

export const destinationTypes = pgTable('destination_types', {
  id: integer('id').primaryKey(),
  label: text('label').notNull(),
  category: text('category').notNull(),
  position: integer('position').notNull(),
});

export const ecusers = pgTable('ecusers', {
  name: text('name').primaryKey(),
  uid: integer('uid'),
  gid: integer('gid'),
  dir: text('dir'),
  shell: text('shell'),
  comment: text('comment'),
});

export const ectransModules = pgTable('ectrans_modules', {
  name: text('name').primaryKey(),
  classe: text('classe'),
  archive: text('archive'),
  active: boolean('active').notNull().default(true),
});

export const transferMethods = pgTable('transfer_methods', {
  name: text('name').primaryKey(),
  ectransModuleName: text('ectrans_module_name').references(() => ectransModules.name),
  value: text('value'),
  restrict: boolean('restrict').notNull().default(false),
  resolve: boolean('resolve').notNull().default(false),
  comment: text('comment'),
  active: boolean('active').notNull().default(true),
});

const int = (name: string) => integer(name);
const long = (name: string) => bigint(name, { mode: 'number' });
const flag = (name: string, value = false) => boolean(name).notNull().default(value);

/** Column property names are the backup keys of wire-decisions §7. */
export const destinations = pgTable(
  'destinations',
  {
    name: text('name').primaryKey(),
    ecuserName: text('ecuser_name').references(() => ecusers.name),
    countryIso: text('country_iso')
      .notNull()
      .references(() => countries.iso),
    type: integer('type')
      .notNull()
      .references(() => destinationTypes.id),
    statusCode: text('status_code').notNull().default('INIT'),
    /**
     * What the scheduler is doing with a started destination (EXEC, RETR, IDLE, SCHE, WAIT), written
     * by the movers only when it changes; the endpoints show it while the stored status is WAIT.
     */
    schedulerStatus: text('scheduler_status'),
    comment: text('comment'),
    active: flag('active', true),
    monitor: flag('monitor'),
    backup: flag('backup'),
    acquisition: flag('acquisition'),
    stopIfDirty: flag('stop_if_dirty'),
    forceProxy: flag('force_proxy'),
    onHostFailure: int('on_host_failure'),
    ifTargetExist: int('if_target_exist'),
    keepInSpool: int('keep_in_spool'),
    maxConnections: int('max_connections'),
    retryCount: int('retry_count'),
    retryFrequency: int('retry_frequency'),
    maxStart: int('max_start'),
    startFrequency: int('start_frequency'),
    maxRequeue: int('max_requeue'),
    maxPending: int('max_pending'),
    maxFileSize: long('max_file_size'),
    resetFrequency: long('reset_frequency'),
    maxInactivity: long('max_inactivity'),
    transferRate: long('transfer_rate'),
    userMail: text('user_mail'),
    mailOnUpdate: flag('mail_on_update'),
    mailOnStart: flag('mail_on_start'),
    mailOnEnd: flag('mail_on_end'),
    mailOnError: flag('mail_on_error'),
    filterName: text('filter_name'),
    dateFormat: text('date_format'),
    groupByDate: flag('group_by_date'),
    update: long('update'),
    transferGroupName: text('transfer_group_name'),
    hostForSourceName: text('host_for_source_name'),
    data: text('data').notNull().default(''),
    /**
     * The record of destination/list as JSON text, kept by a trigger (migration 0007) on every
     * insert and update, so listing 10,000 destinations is one string_agg rather than 10,000
     * rows decoded and serialized again. A test holds it equal to core's destinationView.
     */
    listEntry: text('list_entry').notNull().default(''),
    /** When the destination was created (not part of its record): an S3 bucket's CreationDate in the portal. */
    createdAt: created(),
  },
  (t) => [
    index('destinations_country').on(t.countryIso),
    index('destinations_type').on(t.type),
    // The few with an active time range, which the movers' look reads on every pass.
    index('destinations_time_ranged').on(t.name).where(sql`strpos(${t.data}, 'scheduler.activeTimeRange') > 0`),
  ],
);

export const hosts = pgTable('hosts', {
  hostid: bigserial('hostid', { mode: 'number' }).primaryKey(),
  ecuserName: text('ecuser_name').references(() => ecusers.name),
  transferMethodName: text('transfer_method_name').references(() => transferMethods.name),
  type: text('type'),
  nickname: text('nickname'),
  host: text('host'),
  login: text('login'),
  passwdSealed: text('passwd_sealed'),
  dir: text('dir'),
  data: text('data').notNull().default(''),
  comment: text('comment'),
  active: flag('active', true),
  maxConnections: int('max_connections'),
  retryCount: int('retry_count'),
  retryFrequency: int('retry_frequency'),
  check: flag('check'),
  checkFrequency: long('check_frequency'),
  checkFilename: text('check_filename'),
  mailOnSuccess: flag('mail_on_success'),
  mailOnError: flag('mail_on_error'),
  notifyOnce: flag('notify_once'),
  userMail: text('user_mail'),
  networkName: text('network_name'),
  networkCode: text('network_code'),
  filterName: text('filter_name'),
  transferGroupName: text('transfer_group_name'),
  automaticLocation: flag('automatic_location'),
  acquisitionFrequency: long('acquisition_frequency'),
});

export const destinationHosts = pgTable(
  'destination_hosts',
  {
    destination: text('destination')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade' }),
    hostid: bigint('hostid', { mode: 'number' })
      .notNull()
      .references(() => hosts.hostid, { onDelete: 'cascade' }),
    priority: integer('priority').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.destination, t.hostid] }), index('destination_hosts_host').on(t.hostid)],
);

export const destinationAliases = pgTable(
  'destination_aliases',
  {
    aliasFrom: text('alias_from')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade' }),
    aliasTo: text('alias_to')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.aliasFrom, t.aliasTo] })],
);

export const metadataFields = pgTable(
  'metadata_fields',
  {
    id: serial('id').primaryKey(),
    name: text('name').notNull(),
    label: text('label').notNull(),
    type: text('type').notNull(),
    category: text('category').notNull(),
    tooltip: text('tooltip'),
    /** Sealed (AES-GCM) for password-type fields. */
    defaultValue: text('default_value'),
    editable: flag('editable', true),
    maxOccurs: integer('max_occurs').notNull().default(1),
    position: integer('position').notNull().default(0),
    active: flag('active', true),
  },
  (t) => [uniqueIndex('metadata_fields_name_ci').on(sql`lower(${t.name})`)],
);

/** One row per value; `position` orders the values of a multi-value field. */
export const metadataValues = pgTable(
  'metadata_values',
  {
    destination: text('destination')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade' }),
    fieldId: integer('field_id')
      .notNull()
      .references(() => metadataFields.id, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    /** Plain text, JSON text for structured types, sealed for password fields. */
    value: text('value').notNull(),
  },
  (t) => [primaryKey({ columns: [t.destination, t.fieldId, t.position] })],
);

/** includeInNotes flags live apart from values: a flag may exist for a locked or empty field. */
export const metadataNoteFlags = pgTable(
  'metadata_note_flags',
  {
    destination: text('destination')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade' }),
    fieldId: integer('field_id')
      .notNull()
      .references(() => metadataFields.id, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.destination, t.fieldId] })],
);

export const incomingUsers = pgTable('incoming_users', {
  id: text('id').primaryKey(),
  email: text('email').notNull(),
  iso: text('iso')
    .notNull()
    .references(() => countries.iso),
  portalService: text('portal_service').notNull(),
  active: boolean('active').notNull(),
  passwordSealed: text('password_sealed'),
  lastLoginDate: stamp('last_login_date'),
  /** The address of the last portal login. */
  lastLoginAddress: text('last_login_address'),
  createdAt: created(),
  updatedAt: updated(),
});

export const incomingAssociations = pgTable(
  'incoming_associations',
  {
    userId: text('user_id')
      .notNull()
      .references(() => incomingUsers.id, { onDelete: 'cascade' }),
    destination: text('destination')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade', onUpdate: 'cascade' }),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.destination] }),
    index('incoming_associations_destination').on(t.destination),
  ],
);

export const webUsers = pgTable('web_users', {
  id: text('id').primaryKey(),
  name: text('name'),
  active: boolean('active').notNull(),
  passwordSealed: text('password_sealed').notNull(),
  passwordHash: text('password_hash').notNull(),
  createdAt: created(),
  updatedAt: updated(),
});

export const webUserCategories = pgTable(
  'web_user_categories',
  {
    userId: text('user_id')
      .notNull()
      .references(() => webUsers.id, { onDelete: 'cascade' }),
    category: text('category').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.category] }), index('web_user_categories_category').on(t.category)],
);

/** Append-only: every accepted product step notification, for the history endpoint. */
export const stepNotifications = pgTable(
  'step_notifications',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    product: text('product').notNull(),
    time: text('time').notNull(),
    step: integer('step').notNull(),
    type: text('type').notNull(),
    buffer: bigint('buffer', { mode: 'number' }).notNull().default(0),
    code: text('code').notNull(),
    productTime: stamp('product_time').notNull(),
    /** The schedule in force after this notification (inherited when the notification had none). */
    scheduledTime: stamp('scheduled_time'),
    notifiedAt: stamp('notified_at').notNull(),
  },
  (t) => [
    index('step_notifications_history').on(
      sql`lower(${t.product})`,
      sql`lower(${t.time})`,
      t.step,
      sql`lower(${t.type})`,
      t.notifiedAt,
    ),
  ],
);

/**
 * The latest state of each step key, maintained on ingestion, so summaries read one row per
 * key instead of scanning the history.
 */
export const stepStatus = pgTable(
  'step_status',
  {
    product: text('product').notNull(),
    time: text('time').notNull(),
    productTime: stamp('product_time').notNull(),
    buffer: bigint('buffer', { mode: 'number' }).notNull(),
    step: integer('step').notNull(),
    type: text('type').notNull(),
    code: text('code').notNull(),
    scheduledTime: stamp('scheduled_time'),
    lastUpdate: stamp('last_update').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.product, t.time, t.productTime, t.buffer, t.step, t.type] }),
    index('step_status_cycle').on(sql`lower(${t.product})`, sql`lower(${t.time})`, t.productTime),
  ],
);

export const dataFiles = pgTable('data_files', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  source: text('source').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  checksum: text('checksum'),
  /** The compression filter the last delivery applied (`gzip`), with the size and MD5 of its output. */
  filterName: text('filter_name'),
  filterSize: bigint('filter_size', { mode: 'number' }),
  filterChecksum: text('filter_checksum'),
  /** The SHA-512 of the source's bytes (base64) once a WIS2 notification computed it; null when unknown. */
  sha512: text('sha512'),
  registeredBy: text('registered_by').notNull(),
  createdAt: created(),
  deletedAt: stamp('deleted_at'),
  /** Counts the registrations of new bytes under this file (forced puts); each is retrieved as its own object. */
  instance: integer('instance').notNull().default(0),
  /** The key of the stored copy of the current instance in the store; null until it is retrieved. */
  objectKey: text('object_key'),
  retrievedAt: stamp('retrieved_at'),
  /** The mover retrieving the file, until `fetch_lease_until`; a finish changes nothing unless it still holds it. */
  fetchMover: text('fetch_mover'),
  fetchLeaseUntil: stamp('fetch_lease_until'),
  /** Counts the retrieval attempts of the current instance: each attempt's object key and fence. */
  fetchTries: integer('fetch_tries').notNull().default(0),
  /** When the next retrieval may start: later after a failed one. */
  fetchAt: stamp('fetch_at'),
  /**
   * The Acquisition host the file was listed on: its source is a path there, read with the host's
   * method at retrieval. No foreign key: a host deleted since fails the retrieval with that reason.
   */
  acquiredFrom: long('acquired_from'),
  /** The source's modification time as its listing gave it (requeueon's `$time1`); null when unknown. */
  sourceTime: stamp('source_time'),
});

/**
 * The ids of the WIS2 messages subscriptions received lately: a resend, or the same through another broker, is
 * dropped.
 */
export const wis2Received = pgTable(
  'wis2_received',
  {
    destination: text('destination').notNull(),
    messageId: text('message_id').notNull(),
    receivedAt: stamp('received_at').notNull().defaultNow(),
    /** When acting on it ended; null while it is being taken (or its process died taking it). */
    takenAt: stamp('taken_at'),
  },
  (t) => [primaryKey({ columns: [t.destination, t.messageId] }), index('wis2_received_at').on(t.receivedAt)],
);

/**
 * A Global Cache's counters by the centre whose data it cached (the WMO's `wmo_wis2_gc_*` metrics): `reportBy` is
 * the cache's own centre id, `centreId` the topic's.
 */
export const wis2CacheMetrics = pgTable(
  'wis2_cache_metrics',
  {
    reportBy: text('report_by').notNull(),
    centreId: text('centre_id').notNull(),
    downloaded: bigint('downloaded', { mode: 'number' }).notNull().default(0),
    downloadedBytes: bigint('downloaded_bytes', { mode: 'number' }).notNull().default(0),
    errors: bigint('errors', { mode: 'number' }).notNull().default(0),
    integrityFailed: bigint('integrity_failed', { mode: 'number' }).notNull().default(0),
    noCache: bigint('no_cache', { mode: 'number' }).notNull().default(0),
    lastDownloadAt: stamp('last_download_at'),
    /** Whether the centre's last download worked: the `dataserver_status_flag`. */
    serverUp: boolean('server_up'),
  },
  (t) => [primaryKey({ columns: [t.reportBy, t.centreId] })],
);

/**
 * Each Acquisition host's runs: the one running (its mover and lease), when the next is due, and the
 * output of the last one finished (every entry listed, selected or not, and why).
 */
export const acquisitionRuns = pgTable('acquisition_runs', {
  hostid: bigint('hostid', { mode: 'number' })
    .primaryKey()
    .references(() => hosts.hostid, { onDelete: 'cascade' }),
  mover: text('mover'),
  leaseUntil: stamp('lease_until'),
  startedAt: stamp('started_at'),
  nextAt: stamp('next_at'),
  finishedAt: stamp('finished_at'),
  /** `done`, `failed` (the host could not be listed) or `cut` (stopped at maximumDuration). */
  outcome: text('outcome'),
  output: text('output'),
  /** Every run of the host so far by outcome, and their entries by how they ended: counters for /metrics. */
  runs: jsonb('runs').notNull().default({}),
  entries: jsonb('entries').notNull().default({}),
});

/**
 * The stored copies of data files, one per retrieved instance: the current one, and the ones a
 * forced put superseded, kept for the links already announced until their time is up.
 */
export const storedObjects = pgTable(
  'stored_objects',
  {
    key: text('key').primaryKey(),
    dataFileId: bigint('data_file_id', { mode: 'number' }).notNull(),
    instance: integer('instance').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    md5: text('md5').notNull(),
    sha512: text('sha512').notNull(),
    storedAt: stamp('stored_at').notNull().defaultNow(),
    supersededAt: stamp('superseded_at'),
  },
  (t) => [index('stored_objects_file').on(t.dataFileId, t.instance)],
);

export const dataTransfers = pgTable(
  'data_transfers',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    // No foreign key: the statement that registers a file writes its transfer with it, and files are
    // never deleted (only marked). A key's check would run per put with a plan Postgres caches per
    // connection; cached while data_files was nearly empty, it stays a sequential scan as the table grows.
    dataFileId: bigint('data_file_id', { mode: 'number' }).notNull(),
    destination: text('destination')
      .notNull()
      .references(() => destinations.name, { onDelete: 'cascade' }),
    target: text('target').notNull(),
    uniqueName: text('unique_name').notNull().default(''),
    priority: integer('priority').notNull(),
    status: text('status').notNull(),
    standby: flag('standby'),
    scheduledAt: stamp('scheduled_at').notNull(),
    expiresAt: stamp('expires_at').notNull(),
    /** `k=v,...` of the put, as [key, value] pairs in order. */
    metadata: jsonb('metadata').$type<Array<[string, string]>>().notNull().default([]),
    message: text('message'),
    /** When the transfer may next be sent: its scheduled time, later after a failed attempt. */
    queueAt: stamp('queue_at').notNull().defaultNow(),
    /** Counts the claims; a mover's finish names the attempt it was given, so a stale one changes nothing. */
    attempt: integer('attempt').notNull().default(0),
    /**
     * Starts since the last start-limit requeue (the reference's DAT_START_COUNT): +1 per claim, back
     * to 0 when the destination's maxStart delays the transfer. Unlike `attempt`, it is reset.
     */
    startCount: integer('start_count').notNull().default(0),
    /** Start-limit requeues counted against the destination's maxRequeue; 0 again on a manual requeue. */
    requeueCount: integer('requeue_count').notNull().default(0),
    /** Every start-limit requeue the transfer had, never reset by an operator. */
    requeueHistory: integer('requeue_history').notNull().default(0),
    /**
     * The mover whose attempt may still be writing, until `lease_until`: set by a claim, cleared only
     * when that attempt ends or its lease lapses, also when an operator changed the status meanwhile.
     */
    mover: text('mover'),
    leaseUntil: stamp('lease_until'),
    /** The host of the last attempt. */
    hostId: text('host_id'),
    startedAt: stamp('started_at'),
    finishedAt: stamp('finished_at'),
    sent: bigint('sent', { mode: 'number' }).notNull().default(0),
    /**
     * A WIS2 notice (new or update) was written for it and its deletion not yet: when it leaves the
     * portal by expiry, the sweep announces the deletion once and clears this.
     */
    wis2Announced: flag('wis2_announced'),
    /** While the file is retrieved (SCHE, FETC): the status it takes once it is, WAIT or HOLD. */
    readyStatus: text('ready_status'),
    createdAt: created(),
    updatedAt: updated(),
  },
  (t) => [
    // What a claim reads: the due transfers of one destination, in the order they are sent.
    // A transfer whose attempt may still be writing (a mover holds it) is not due, whatever its status.
    index('data_transfers_due')
      .on(t.destination, t.priority, t.queueAt, t.id)
      .where(sql`${t.status} in ('WAIT', 'RETR', 'INTR') and ${t.mover} is null`),
    // The attempts that may be writing, per destination and per host (limits) and by lease (the reaper).
    // The due transfers that started before: where a claim looks for those at their start limit.
    index('data_transfers_restarted')
      .on(t.destination, t.priority, t.queueAt, t.id)
      .where(sql`${t.status} in ('WAIT', 'RETR', 'INTR') and ${t.mover} is null and ${t.startCount} > 0`),
    // The files to retrieve, most urgent first: only the transfers waiting for their file's bytes.
    index('data_transfers_retrieval')
      .on(t.priority, t.queueAt, t.dataFileId)
      .where(sql`${t.status} in ('SCHE', 'FETC')`),
    index('data_transfers_running').on(t.destination).where(sql`${t.mover} is not null`),
    index('data_transfers_host_running').on(t.hostId).where(sql`${t.mover} is not null`),
    index('data_transfers_lease').on(t.leaseUntil).where(sql`${t.mover} is not null`),
    // Live transfers are unique per destination + target + unique name: concurrent puts race on this index.
    uniqueIndex('data_transfers_live_key')
      .on(t.destination, t.target, t.uniqueName)
      .where(sql`${t.status} not in ('STOP', 'FAIL')`),
    index('data_transfers_expiry').on(t.expiresAt).where(sql`${t.status} not in ('DONE', 'FAIL', 'STOP')`),
    index('data_transfers_file').on(t.dataFileId),
    // The sweep's announced transfers that expired: only those still to be told.
    index('data_transfers_wis2_expiry').on(t.expiresAt).where(sql`${t.wis2Announced}`),
    // The purge's walk over ended transfers by age: live ones are not in it, so it never reads them.
    index('data_transfers_retired').on(t.updatedAt).where(sql`${t.status} in ('DONE', 'FAIL', 'STOP')`),
    // The monitor's counts per status and its pages of a destination's transfers by status, newest
    // first: an index-only count and a keyset page, whatever the table's size.
    index('data_transfers_monitor').on(t.destination, t.status, t.id),
    // The portal's listing of a destination's files by path, in byte order, a page at a time.
    index('data_transfers_portal').on(t.destination, sql`${t.target} collate "C"`, t.id.desc()),
    // A directory's time in the portal, its newest file's (db/repositories/portal-folders.ts): each
    // transfer under its target's directory, newest file first, so a folder's time is read with a
    // seek per directory below it rather than a read of every file below it.
    index('data_transfers_portal_folder')
      .on(t.destination, sql`(regexp_replace(${t.target}, '/?[^/]*$', '') collate "C")`, t.dataFileId.desc())
      .where(sql`${t.status} not in ('INIT', 'SCHE', 'FETC')`),
  ],
);

/**
 * One row per status change of a transfer, written in the transaction that makes the change:
 * what the operator's `transfer show` and the monitor read, as the reference's history.
 */
export const transferHistory = pgTable(
  'transfer_history',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    transferId: bigint('transfer_id', { mode: 'number' })
      .notNull()
      .references(() => dataTransfers.id, { onDelete: 'cascade' }),
    destination: text('destination').notNull(),
    hostId: text('host_id'),
    status: text('status').notNull(),
    at: stamp('at').notNull(),
    sent: bigint('sent', { mode: 'number' }).notNull().default(0),
    comment: text('comment'),
    error: flag('error'),
  },
  (t) => [
    index('transfer_history_transfer').on(t.transferId, t.at),
    index('transfer_history_destination').on(t.destination, t.at),
    // The last result of each host of a destination: one probe per host, even for a backup host
    // whose last use is far behind the destination's newest rows.
    index('transfer_history_host').on(t.destination, t.hostId, t.at).where(sql`${t.hostId} is not null`),
  ],
);

/** Roles of web users; only categories with console access let a user into the console. */
export const aclCategories = pgTable('acl_categories', {
  id: text('id').primaryKey(),
  label: text('label').notNull(),
  consoleAccess: flag('console_access'),
});

/** Console sessions; the cookie carries the token, the table only its hash. */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => webUsers.id, { onDelete: 'cascade' }),
    csrf: text('csrf').notNull(),
    createdAt: created(),
    lastSeenAt: stamp('last_seen_at').notNull(),
  },
  (t) => [index('console_sessions_user').on(t.userId)],
);

/**
 * Failed console sign-ins, one row each, by key (username, username at an address, address): the
 * rules count those within a sliding window, and the window's oldest tells how long to wait.
 */
export const signInFailures = pgTable(
  'sign_in_failures',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    key: text('key').notNull(),
    failedAt: stamp('failed_at').notNull(),
  },
  (t) => [index('sign_in_failures_key').on(t.key, t.failedAt), index('sign_in_failures_time').on(t.failedAt)],
);

export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: stamp('at').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    targetKind: text('target_kind').notNull(),
    target: text('target').notNull(),
    detail: text('detail'),
  },
  (t) => [index('audit_log_at').on(t.at)],
);

/** The latest product time (time base) of each product and time, kept on ingestion for the summary. */
export const stepCycles = pgTable(
  'step_cycles',
  {
    product: text('product').notNull(),
    time: text('time').notNull(),
    productTime: stamp('product_time').notNull(),
  },
  (t) => [primaryKey({ columns: [t.product, t.time] })],
);

/**
 * A version per rendered list, raised by a trigger at the commit of every transaction that
 * changed what the list shows (migration 0008). A process keeps a rendered list with its version
 * and renders again only when the version moved.
 */
export const listVersions = pgTable('list_versions', {
  name: text('name').primaryKey(),
  version: bigint('version', { mode: 'number' }).notNull().default(0),
});

/**
 * Where each destination stands in its hosts' ring (the reference's SCHEDULER_VALUE): the host in
 * use, the tries spent on it, the rounds of every host since the last success, and until when the
 * destination waits before its next attempt. Written by the movers in the transaction that ends an
 * attempt, under this row's lock; kept apart from `destinations` so that it raises no list version.
 */
export const destinationState = pgTable('destination_state', {
  destination: text('destination')
    .primaryKey()
    .references(() => destinations.name, { onDelete: 'cascade' }),
  hostIndex: integer('host_index').notNull().default(0),
  hostFailures: integer('host_failures').notNull().default(0),
  rounds: integer('rounds').notNull().default(0),
  leftPrimaryAt: stamp('left_primary_at'),
  /** No attempt before this time: a host's retry frequency, or a sleep after a failed round. */
  pausedUntil: stamp('paused_until'),
  /** Why it waits: 'retry' (shown RETR) or 'sleep' (shown IDLE). */
  pauseReason: text('pause_reason'),
  lastSuccessAt: stamp('last_success_at'),
  lastErrorAt: stamp('last_error_at'),
  lastError: text('last_error'),
  lastHostId: text('last_host_id'),
});

/**
 * The destinations that delayed a transfer at its start limit since their last success (the
 * reference's SCHEDULER_VALUE.hasRequeued): the next DONE gives their requeued transfers back their
 * scheduled times. Apart from `destination_state`: a claim writes it under the destination's row
 * lock, which an ending attempt takes after the state's, so the two never wait on each other.
 */
export const destinationRequeues = pgTable('destination_requeues', {
  destination: text('destination')
    .primaryKey()
    .references(() => destinations.name, { onDelete: 'cascade' }),
  at: stamp('at').notNull(),
});

/**
 * When each destination's waiting transfers may next be due: at or before the queue time of its
 * earliest waiting transfer, so that the movers' look for due destinations reads the few whose
 * time has come through `next_at`'s index instead of probing every destination. A trigger on
 * data_transfers lowers it whenever a transfer starts waiting (migration 0025); it is raised only
 * by `settleDueQueue` (db/repositories/due-queue.ts), under a lock that no put holds at that time.
 */
export const destinationQueue = pgTable(
  'destination_queue',
  {
    destination: text('destination')
      .primaryKey()
      .references(() => destinations.name, { onDelete: 'cascade' }),
    nextAt: stamp('next_at').notNull(),
  },
  (t) => [index('destination_queue_next_at').on(t.nextAt)],
);

/**
 * The sessions each mover holds open to a host, busy or kept idle for reuse, as it last published
 * them: a claim counts them against the host's maxConnections (see the claim's `running`), so that
 * no mover opens a session the server would see beyond the limit. A mover writes its row when the
 * number changes and renews `lease_until` on its heartbeat; a row whose lease lapsed is ignored.
 */
export const hostSessions = pgTable(
  'host_sessions',
  {
    hostId: text('host_id').notNull(),
    mover: text('mover').notNull(),
    sessions: integer('sessions').notNull(),
    leaseUntil: stamp('lease_until').notNull(),
  },
  (t) => [primaryKey({ columns: [t.hostId, t.mover] })],
);

const incomingUserRef = (name: string) =>
  text(name)
    .notNull()
    .references(() => incomingUsers.id, { onDelete: 'cascade' });

/**
 * The portal operations an incoming user may do: `dir`, `get`, `mtime` and `size` from its
 * creation, as in the reference; `put`, `delete`, `mkdir`, `rename` and `rmdir` once granted.
 */
export const portalPermissions = pgTable(
  'portal_permissions',
  { userId: incomingUserRef('user_id'), operation: text('operation').notNull() },
  (t) => [primaryKey({ columns: [t.userId, t.operation] })],
);

/** An incoming user's portal options (`portal.maxConnections`, `portal.getPathPermRegex`, ...). */
export const portalOptions = pgTable(
  'portal_options',
  { userId: incomingUserRef('user_id'), name: text('name').notNull(), value: text('value').notNull() },
  (t) => [primaryKey({ columns: [t.userId, t.name] })],
);

/**
 * The people who registered to a self-service user. Their password and verification token are
 * generated with 256 bits from a cryptographic generator, so a SHA-256 of each is enough to check
 * them and lets a login find its subscriber by the hash alone.
 */
export const portalSubscribers = pgTable(
  'portal_subscribers',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: incomingUserRef('user_id'),
    name: text('name').notNull(),
    email: text('email').notNull(),
    iso: text('iso')
      .notNull()
      .references(() => countries.iso),
    /** `unverified` (mailed a link), `verified` (waiting for an operator), `active`, `revoked`. */
    status: text('status').notNull(),
    passwordHash: text('password_hash'),
    /** The verification token's hash, until it is used. */
    tokenHash: text('token_hash'),
    tokenExpiresAt: stamp('token_expires_at'),
    createdAt: created(),
    verifiedAt: stamp('verified_at'),
    activatedAt: stamp('activated_at'),
  },
  (t) => [
    uniqueIndex('portal_subscribers_email').on(t.userId, sql`lower(${t.email})`),
    uniqueIndex('portal_subscribers_token').on(t.tokenHash),
    uniqueIndex('portal_subscribers_password').on(t.passwordHash),
  ],
);

/** Browser sessions of the portal; the cookie carries the token, the table only its hash. */
export const portalSessions = pgTable(
  'portal_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: incomingUserRef('user_id'),
    subscriberId: bigint('subscriber_id', { mode: 'number' }).references(() => portalSubscribers.id, {
      onDelete: 'cascade',
    }),
    csrf: text('csrf').notNull(),
    /** The fingerprint of the credentials it was opened with (credentialFingerprint): it ends when they change. */
    credential: text('credential'),
    createdAt: created(),
    lastSeenAt: stamp('last_seen_at').notNull(),
  },
  (t) => [index('portal_sessions_user').on(t.userId)],
);

/**
 * The transfers a user has in progress on any server, for `portal.maxConnections`: a row per
 * download or upload, renewed while it runs; a row whose lease lapsed (its server died) is ignored.
 */
export const portalConnections = pgTable(
  'portal_connections',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id').notNull(),
    server: text('server').notNull(),
    protocol: text('protocol').notNull(),
    startedAt: stamp('started_at').notNull(),
    leaseUntil: stamp('lease_until').notNull(),
  },
  (t) => [index('portal_connections_user').on(t.userId, t.leaseUntil)],
);

/** Bytes a user moved through the portal, per minute and protocol: the quotas and the traffic chart. */
export const portalTraffic = pgTable(
  'portal_traffic',
  {
    userId: text('user_id').notNull(),
    minute: stamp('minute').notNull(),
    protocol: text('protocol').notNull(),
    downloadBytes: bigint('download_bytes', { mode: 'number' }).notNull().default(0),
    uploadBytes: bigint('upload_bytes', { mode: 'number' }).notNull().default(0),
    downloads: integer('downloads').notNull().default(0),
    uploads: integer('uploads').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.userId, t.minute, t.protocol] })],
);

/**
 * WIS2 notifications still to publish or published, written in the transaction that makes a file
 * appear in the portal or leave it (core/wis2): a broker that is down delays them, never loses them.
 * A publisher claims due rows (`not_before` passed) in order for `claimed_until`, publishes each,
 * then records `done_at` and the outcome. `message_id` is given at the first claim and kept, so a
 * message sent again after a lost acknowledgement carries the same id.
 */
export const wis2Outbox = pgTable(
  'wis2_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** None for a Global Cache's republication of a message whose data it does not keep (`cache: false`). */
    dataFileId: bigint('data_file_id', { mode: 'number' }),
    transferId: bigint('transfer_id', { mode: 'number' }),
    destination: text('destination').notNull(),
    target: text('target').notNull(),
    /** `new`, `update` or `deletion`: the link's relation. */
    kind: text('kind').notNull(),
    /**
     * The WIS2 message a subscription received the file by, and its topic: a destination in Global Cache mode
     * republishes it (core/wis2/cache-message.ts).
     */
    originTopic: text('origin_topic'),
    originMessage: jsonb('origin_message'),
    /** When the file becomes visible in the portal: its transfer's queue time (now for a deletion). */
    notBefore: stamp('not_before').notNull(),
    createdAt: created(),
    messageId: text('message_id'),
    claimedUntil: stamp('claimed_until'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    doneAt: stamp('done_at'),
    /** `published`, or why the row was dropped (no topic any more, a message over 8 KiB, …); not done: why held. */
    outcome: text('outcome'),
  },
  (t) => [index('wis2_outbox_due').on(t.notBefore, t.id).where(sql`${t.doneAt} is null`)],
);

/**
 * The public keys that open an incoming user's account on the portal's SFTP server, as `ssh-keygen`
 * would list them: a key is found by its fingerprint within its own user only.
 */
export const portalAuthorizedKeys = pgTable(
  'portal_authorized_keys',
  {
    userId: incomingUserRef('user_id'),
    fingerprint: text('fingerprint').notNull(),
    algorithm: text('algorithm').notNull(),
    blob: text('blob').notNull(),
    comment: text('comment').notNull().default(''),
    addedAt: created(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.fingerprint] })],
);

/**
 * What the purge has done, over every process that sweeps (for /metrics), and how far its check
 * of identities has read the transfers in id order. One row, written by each purge batch.
 */
export const retentionState = pgTable('retention_state', {
  id: integer('id').primaryKey(),
  identityCheckedId: bigint('identity_checked_id', { mode: 'number' }).notNull().default(0),
  purgedTransfers: bigint('purged_transfers', { mode: 'number' }).notNull().default(0),
  purgedHistory: bigint('purged_history', { mode: 'number' }).notNull().default(0),
  purgedDataFiles: bigint('purged_data_files', { mode: 'number' }).notNull().default(0),
});

/**
 * Mails of destinations' and hosts' events (core/notifications), written in the event's own transaction and
 * sent by the server's mail sender: rows of one recipient, destination and kind go out as one digest.
 */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    recipient: text('recipient').notNull(),
    destination: text('destination').notNull(),
    hostId: text('host_id'),
    /** `start`, `end`, `error`, `hold`, `update`, `host-error` or `host-success` (core/notifications/policy.ts). */
    kind: text('kind').notNull(),
    transferId: bigint('transfer_id', { mode: 'number' }),
    target: text('target'),
    /** Why: a failure's message (scrubbed of the host's secrets when it was written), or what changed. */
    reason: text('reason'),
    createdAt: created(),
    /** The sender's claim: its rows are its own until `claimed_until`. */
    claim: text('claim'),
    claimedUntil: stamp('claimed_until'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    doneAt: stamp('done_at'),
    /** `sent`, or why the row was given up (an address the SMTP server refused). */
    outcome: text('outcome'),
  },
  (t) => [index('mail_outbox_pending').on(t.id).where(sql`${t.doneAt} is null`)],
);

/**
 * Each mover's heartbeat (core/dissemination/mover.ts): written at its start and at every beat, at the
 * database's time; a mover that stops on purpose says so. One that stopped beating without saying it did
 * is lost (dead, paused, cut off), whether or not it held any attempt: /metrics shows its heartbeat's age.
 */
export const movers = pgTable('movers', {
  name: text('name').primaryKey(),
  startedAt: stamp('started_at').notNull(),
  heartbeatAt: stamp('heartbeat_at').notNull(),
  /** How often it beats: its heartbeat is missed once it is several of these old. */
  heartbeatMs: integer('heartbeat_ms').notNull(),
  stoppedAt: stamp('stopped_at'),
});

/**
 * Hosts failing since their first failure and not yet working again, for the hosts with mail options: a
 * `notifyOnce` host is mailed once per such episode, and its `mailOnSuccess` mail ends one.
 */
export const hostMailEpisodes = pgTable('host_mail_episodes', {
  hostId: text('host_id').primaryKey(),
  failingSince: stamp('failing_since').notNull(),
});

/**
 * Each checked host's checks (core/host-checks): the one under way (its server's claim and lease), and the
 * latest result with the few before it. A check's start is what the next one is due from, as in the reference.
 */
export const hostChecks = pgTable('host_checks', {
  hostid: bigint('hostid', { mode: 'number' })
    .primaryKey()
    .references(() => hosts.hostid, { onDelete: 'cascade' }),
  claim: text('claim'),
  leaseUntil: stamp('lease_until'),
  /** When the last check began (the one under way, if any). */
  startedAt: stamp('started_at'),
  /** The latest result: when its check began, whether it worked, how long it took, what it did or why it failed. */
  checkedAt: stamp('checked_at'),
  ok: boolean('ok'),
  durationMs: integer('duration_ms'),
  message: text('message'),
  /** The results before the latest, newest first: `[{at, ok, durationMs, message}]`. */
  history: jsonb('history').notNull().default([]),
});
