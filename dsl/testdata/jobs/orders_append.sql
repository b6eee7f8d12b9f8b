-- The seed's DataFrame flow as SQL.
-- name: orders_sync
-- connection: sqlite:orders.db
INSERT INTO orders_target
SELECT id, name, amount, status
FROM orders_stream
WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER');
