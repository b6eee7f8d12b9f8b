-- name: j
-- conection: postgres://db.example/app
-- schedul: @every 1m
-- note: this is a comment
-- date: 2024-01-01
-- owner: data team
INSERT INTO t SELECT * FROM s;
