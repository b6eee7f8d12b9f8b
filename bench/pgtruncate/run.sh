#!/usr/bin/env bash
# TRUNCATE of a tracked PostgreSQL table (#17): a TRUNCATE of N rows on an
# untracked and on a tracked table (a STANDARD stream, a merge job whose
# target holds the rows), alternating, ROUNDS rounds, each after refilling
# the table (and syncing the target) and a CHECKPOINT; then the run that
# reads the truncate. Prints each round, the log's growth, and the load.
# Needs psql and a PostgreSQL at 127.0.0.1:5432 (user postgres, trust), like the tests.
set -euo pipefail
BIN=${BIN:-./sluice}   # go build -o sluice ./cmd/sluice
N=${N:-1000000}; ROUNDS=${ROUNDS:-3}
PG=postgres://postgres@127.0.0.1:5432
U=trbench_plain_$$; T=trbench_tracked_$$
psql -q "$PG/postgres" -c "CREATE DATABASE $U" -c "CREATE DATABASE $T"
trap 'psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $U WITH (FORCE)" -c "DROP DATABASE IF EXISTS $T WITH (FORCE)"' EXIT
for db in $U $T; do psql -q "$PG/$db" -c "CREATE TABLE t (id bigint PRIMARY KEY, name text, amount numeric(12,2), at timestamptz)"; done
$BIN sql --conn "$PG/$T" "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s ON TABLE t" >/dev/null
D=$(mktemp -d)
printf 'name: copy_t\nconnection: %s\nsource: s\nselect: [id, name, amount, at]\nsink: {table: t_copy, mode: merge, keys: [id]}\n' "$PG/$T" > $D/copy_t.yaml
fill() { psql -qAt "$PG/$1" -c "TRUNCATE t" -c "INSERT INTO t SELECT g, md5(g::text), g/100.0, now() FROM generate_series(1,$N) g" -c "VACUUM ANALYZE t" >/dev/null; }
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
for r in $(seq 1 $ROUNDS); do
  fill $U; psql -qAt "$PG/$U" -c CHECKPOINT
  echo "round $r untracked TRUNCATE $(secs psql -qAt "$PG/$U" -c "TRUNCATE t") s, load $(cut -d' ' -f1 /proc/loadavg)"
  fill $T; $BIN run $D/copy_t.yaml >/dev/null; psql -qAt "$PG/$T" -c "VACUUM ANALYZE t_copy" -c CHECKPOINT
  b=$(psql -qAt "$PG/$T" -c "SELECT pg_total_relation_size('sluice.log_t')")
  x=$(secs psql -qAt "$PG/$T" -c "TRUNCATE t")
  a=$(psql -qAt "$PG/$T" -c "SELECT pg_total_relation_size('sluice.log_t')")
  echo "round $r tracked TRUNCATE $x s, log +$(( (a - b) / 1048576 )) MB, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "round $r run after it $(secs $BIN run $D/copy_t.yaml) s, load $(cut -d' ' -f1 /proc/loadavg)"
done
