-- name: bad name!
-- schedule: @hourly
-- schedule: @daily
CREATE TABLE t (id INT, amount MONEY, PRIMARY KEY (idx));
CREATE TABLE STREAM s ON TABLE t TIMESTAMP AS OF '2024-01-01 00:00:00';
INSERT INTO target (a, b) SELECT x FROM s WHERE ORDER BY x;
SELECT 1;
