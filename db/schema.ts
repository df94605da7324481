import { sql } from 'drizzle-orm';
import { boolean, index, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

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

export const destinations = pgTable('destinations', {
  name: text('name').primaryKey(),
});

export const incomingUsers = pgTable('incoming_users', {
  id: text('id').primaryKey(),
  email: text('email').notNull(),
  iso: text('iso').notNull().references(() => countries.iso),
  portalService: text('portal_service').notNull(),
  active: boolean('active').notNull(),
  passwordSealed: text('password_sealed'),
  lastLoginDate: stamp('last_login_date'),
  createdAt: created(),
  updatedAt: updated(),
});

export const incomingAssociations = pgTable(
  'incoming_associations',
  {
    userId: text('user_id').notNull().references(() => incomingUsers.id, { onDelete: 'cascade' }),
    destination: text('destination').notNull().references(() => destinations.name, { onDelete: 'cascade', onUpdate: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.userId, t.destination] }), index('incoming_associations_destination').on(t.destination)],
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
    userId: text('user_id').notNull().references(() => webUsers.id, { onDelete: 'cascade' }),
    category: text('category').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.category] }), index('web_user_categories_category').on(t.category)],
);
