-- name: orders_merge
-- The seed's production pattern: MERGE INTO the replica, with the stream's
-- changes (filtered as in the seed) as the source. The stream shows the
-- initial rows, so the replica starts as a full copy.
MERGE INTO orders_replica AS t
USING (
  SELECT id, name, amount, status
  FROM orders_merge_stream
  WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER')
) AS s
ON t.id = s.id
WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount, t.status = s.status
WHEN NOT MATCHED THEN INSERT (id, name, amount, status) VALUES (s.id, s.name, s.amount, s.status);
