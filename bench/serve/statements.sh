#!/bin/bash
# statements.sh BIN [LABEL]: PostgreSQL statements per delivery of one job under `BIN serve`.
#
# One table t0 (tracked, APPEND_ONLY stream s0) and its target r0 in a database of their own;
# one job (pushed down: source and target in that database), schedule $SCHED (default
# continuous). The database gets log_statement = 'all' and serve connects as a role of its own,
# so the server log's lines of that role are serve's statements. Five times: one row inserted,
# wait until it is in r0, then $SETTLE seconds (default 3); prints the statements of the window.
# Needs a superuser at $PG (default postgres://postgres@127.0.0.1:5432) and read access to the
# server's log ($PGLOG, default /var/log/postgresql/postgresql-15-main.log) whose
# log_line_prefix has %u@%d.
set -e
BIN=$1; LABEL=${2:-run}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
PGLOG=${PGLOG:-/var/log/postgresql/postgresql-15-main.log}
DB=${DB:-sluice_stmtcount}; ROLE=${DB}_srv
psql "$PG/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" \
	-c "DO \$\$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$ROLE') THEN CREATE ROLE $ROLE SUPERUSER LOGIN; END IF; END\$\$"
URL="$PG/$DB?sslmode=disable"
SURL="${PG/\/\/*@/\/\/$ROLE@}/$DB?sslmode=disable"
W=$(mktemp -d); mkdir -p "$W/jobs"
psql "$URL" -qc "CREATE TABLE t0 (id bigint PRIMARY KEY, ins bigint NOT NULL); CREATE TABLE r0 (id bigint PRIMARY KEY, ins bigint NOT NULL);"
"$BIN" sql --conn "$URL" "ALTER TABLE t0 SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s0 ON TABLE t0 WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');" >/dev/null
cat > "$W/jobs/j0.yaml" <<J
name: j0
connection: '$SURL'
source: s0
filter: "\`__change_type\` = 'INSERT'"
select: [id, ins]
sink:
  table: r0
  mode: append
schedule: ${SCHED:-continuous}
J
psql "$PG/postgres?sslmode=disable" -qc "ALTER DATABASE $DB SET log_statement = 'all'"
"$BIN" serve --state "sqlite:$W/state.db" "$W/jobs" > "$W/serve.log" 2>&1 &
SP=$!
sleep 8
for i in 1 2 3 4 5; do
	a=$(wc -l < "$PGLOG")
	psql "$URL" -qc "INSERT INTO t0 VALUES ($i, $i)"
	for _ in $(seq 1 300); do
		[ "$(psql "$URL" -Atc "SELECT count(*) FROM r0 WHERE id = $i")" = 1 ] && break
		sleep 0.1
	done
	sleep "${SETTLE:-3}"
	b=$(wc -l < "$PGLOG")
	sed -n "$((a+1)),${b}p" "$PGLOG" | grep " $ROLE@$DB " > "$W/stmts-$i.log" || true
	echo "$LABEL delivery $i: $(grep -cE 'LOG:  (statement|execute [^ ]*):' "$W/stmts-$i.log") statements ($W/stmts-$i.log)"
done
kill $SP; wait $SP || true
psql "$PG/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
