INSERT INTO "acl_categories" ("id", "label", "console_access") VALUES
  ('administrator', 'Administrator', true),
  ('operator', 'Operator (no console access)', false)
ON CONFLICT ("id") DO NOTHING;
