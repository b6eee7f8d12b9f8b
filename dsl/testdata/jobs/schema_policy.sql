-- name: mirror_log
-- on_schema_change: ignore
INSERT INTO orders_log SELECT * FROM orders_stream;
