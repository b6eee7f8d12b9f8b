-- The demo source: an orders table with change tracking, one table stream
-- per job (a stream is one offset, so each job consumes its own), and three
-- rows. Run it once: sluice sql -f setup.sql
CREATE TABLE IF NOT EXISTS orders (
  id INT,
  customer STRING,
  amount DECIMAL(10,2),
  status STRING,
  PRIMARY KEY (id)
);
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');

-- orders_copy.yaml: net changes per key, starting with the rows present now.
CREATE TABLE STREAM IF NOT EXISTS orders_copy_stream ON TABLE orders
  WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');
-- orders_events.sql: every inserted row, even if later updated or deleted.
CREATE TABLE STREAM IF NOT EXISTS orders_events_stream ON TABLE orders
  WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY', 'SHOW_INITIAL_ROWS' = 'TRUE');

INSERT INTO orders VALUES
  (1, 'Alice', 1000.00, 'active'),
  (2, 'Bob', 2000.00, 'active'),
  (3, 'Carol', 500.00, 'active');
