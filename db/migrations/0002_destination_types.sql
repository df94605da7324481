INSERT INTO "destination_types" ("id", "label", "category", "position") VALUES
  (0, 'Acquisition', 'acquisition', 0),
  (1, 'Dissemination', 'dissemination', 1),
  (2, 'Time Critical', 'time-critical', 2)
ON CONFLICT ("id") DO NOTHING;
