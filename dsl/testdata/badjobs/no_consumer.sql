-- name: setup_only
CREATE TABLE t (id INT PRIMARY KEY);
INSERT INTO t VALUES (1);
