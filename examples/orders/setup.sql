-- The seed's orders table (seeds/000), with change tracking and one table
-- stream per job: the append job, the MERGE job and jobs/orders_replica.yaml.
-- STANDARD streams need a primary key, which the seed's table leaves out.
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
-- The checked-in job jobs/orders_replica.yaml reads its own stream: a
-- stream is one offset, so each job consumes its own.
CREATE TABLE STREAM orders_replica_stream ON TABLE orders
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
