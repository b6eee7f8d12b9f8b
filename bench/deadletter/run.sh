#!/usr/bin/env bash
# Dead letters: the cost of dead_letter on a clean window (A: no dead_letter,
# B: dead_letter, no bad row) and of the fallback (C: dead_letter, one bad
# row per window), PostgreSQL → PostgreSQL merge, N changed rows per window.
# Contenders alternate in rotated order, ROUNDS rounds; prints median and min–max.
# Needs psql and a PostgreSQL at 127.0.0.1:5432 (user postgres, trust), like the tests.
set -euo pipefail
BIN=${BIN:-./sluice}   # go build -o sluice ./cmd/sluice
N=${N:-20000}; ROUNDS=${ROUNDS:-5}
PG=postgres://postgres@127.0.0.1:5432
S=dlbench_src_$$; K=dlbench_sink_$$
psql -q "$PG/postgres" -c "CREATE DATABASE $S" -c "CREATE DATABASE $K"
trap 'psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $S WITH (FORCE)" -c "DROP DATABASE IF EXISTS $K WITH (FORCE)"' EXIT
SRC="$PG/$S?sslmode=disable"; SNK="$PG/$K?sslmode=disable"
psql -q "$SRC" -c "CREATE TABLE t (id bigint PRIMARY KEY, v integer, note text)"
$BIN sql --conn "$SRC" "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')" >/dev/null
for j in a b c; do $BIN sql --conn "$SRC" "CREATE TABLE STREAM s_$j ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')" >/dev/null; done
psql -q "$SNK" -c "CREATE TABLE ta (id bigint PRIMARY KEY, v integer, note text)" -c "CREATE TABLE tb (LIKE ta INCLUDING ALL)" -c "CREATE TABLE tc (id bigint PRIMARY KEY, v integer CHECK (v >= 0), note text)"
D=$(mktemp -d)
printf 'name: a\nconnection: %s\nsource: s_a\nsink: {table: ta, mode: merge, keys: [id], connection: %s}\n' "$SRC" "$SNK" > $D/a.yaml
printf 'name: b\nconnection: %s\nsource: s_b\nsink: {table: tb, mode: merge, keys: [id], connection: %s, dead_letter: rej}\n' "$SRC" "$SNK" > $D/b.yaml
printf 'name: c\nconnection: %s\nsource: s_c\nsink: {table: tc, mode: merge, keys: [id], connection: %s, dead_letter: rej}\n' "$SRC" "$SNK" > $D/c.yaml
declare -A T
order=(a b c)
for r in $(seq 1 $ROUNDS); do
  base=$(( (r-1) * N ))
  # one bad row (v < 0) per window: only tc refuses it
  psql -q "$SRC" -c "INSERT INTO t SELECT g, CASE WHEN g = $base + 1 THEN -1 ELSE g % 1000 END, 'n' || g FROM generate_series($base + 1, $base + $N) g"
  for j in "${order[@]}"; do
    s=$(date +%s.%N); $BIN run $D/$j.yaml >/dev/null; e=$(date +%s.%N)
    T[$j]+="$(echo "$e - $s" | bc) "
  done
  order=("${order[@]:1}" "${order[0]}")
done
for j in a b c; do
  echo "$j: $(echo ${T[$j]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {printf "median %.3fs  min %.3fs  max %.3fs  (%d runs)", a[int((NR+1)/2)], a[1], a[NR], NR}')"
done
echo "dead letters in tc's table: $(psql -tA "$SNK" -c "SELECT count(*) FROM rej WHERE job = 'c'")  rows in ta/tb/tc: $(psql -tA "$SNK" -c "SELECT (SELECT count(*) FROM ta) || '/' || (SELECT count(*) FROM tb) || '/' || (SELECT count(*) FROM tc)")"
uptime
