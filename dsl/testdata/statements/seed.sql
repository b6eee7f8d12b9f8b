-- The statements of the seed walkthrough, in order.
CREATE TABLE IF NOT EXISTS orders ( id INT, name STRING, amount DECIMAL(10,2), status STRING );
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');
INSERT INTO orders VALUES (1, 'Alice', 1000.00, 'active'), (2, 'Bob', 2000.00, 'active'), (3, 'Carol', 500.00, 'active');
CREATE TABLE STREAM orders_stream ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active');
UPDATE orders SET amount = 1500.00 WHERE id = 1;
DELETE FROM orders WHERE id = 3;
SELECT * FROM orders_stream;
CREATE TABLE IF NOT EXISTS orders_target ( id INT, name STRING, amount DECIMAL(10,2), status STRING );
DROP TABLE IF EXISTS orders_changes_tmp;
