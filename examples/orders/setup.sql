-- The seed's orders table (seeds/000), with change tracking and two table
-- streams: one for the append job, one for the MERGE job. STANDARD streams
-- need a primary key, which the seed's table leaves out.
CREATE TABLE IF NOT EXISTS orders (
  id INT,
  name STRING,
  amount DECIMAL(10,2),
  status STRING,
  PRIMARY KEY (id)
);
ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true');

INSERT INTO orders VALUES
  (1, 'Alice', 1000.00, 'active'),
  (2, 'Bob', 2000.00, 'active'),
  (3, 'Carol', 500.00, 'active');

CREATE TABLE STREAM orders_stream ON TABLE orders
  WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
CREATE TABLE STREAM orders_merge_stream ON TABLE orders
  WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'TRUE');

CREATE TABLE IF NOT EXISTS orders_target (
  id INT,
  name STRING,
  amount DECIMAL(10,2),
  status STRING
);

-- The MERGE job's target (a MERGE target must exist; its key is the ON column).
CREATE TABLE IF NOT EXISTS orders_replica (
  id INT,
  name STRING,
  amount DECIMAL(10,2),
  status STRING,
  PRIMARY KEY (id)
);
