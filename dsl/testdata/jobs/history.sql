-- name: orders_history
-- history_keys: id
INSERT INTO orders_history SELECT id, status, amount FROM orders_stream;
