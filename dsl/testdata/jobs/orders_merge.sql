-- name: orders_merge
-- connection: sqlite:orders.db
--
-- The seed's production pattern: MERGE INTO the target, here straight from
-- a filtered subquery of the stream.
CREATE TABLE IF NOT EXISTS orders_target (
    id INT,
    name STRING,
    amount DECIMAL(10,2),
    status STRING
);

MERGE INTO orders_target AS t USING (SELECT * FROM orders_stream WHERE `__change_type` IN ('INSERT','UPDATE_AFTER')) AS s ON t.id = s.id
WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount, t.status = s.status
WHEN NOT MATCHED THEN INSERT (id, name, amount, status) VALUES (s.id, s.name, s.amount, s.status);
