-- name: dl_self
-- dead_letter: orders_target
INSERT INTO orders_target SELECT id, amount FROM orders_stream
