-- name: two
INSERT INTO a SELECT * FROM orders_stream;
MERGE INTO b USING orders_stream AS s ON b.id = s.id
WHEN MATCHED THEN DELETE;
