-- name: orders_dl_sql
-- dead_letter: orders_rejects
INSERT INTO orders_target SELECT id, amount FROM orders_stream
