#!/usr/bin/env bash
# variants.sh: what each part of the capture function costs, measured
# side by side on one server. Prints the median time per transaction of
# each database and its difference from the untracked one.
#
#   bash bench/pgcapture/variants.sh 'postgres://postgres@127.0.0.1:55433/postgres?sslmode=disable' [seconds] [rounds] [single|tpcb|loop|txcpu]
#
# Use a throw-away server (it creates and drops databases named
# sluice_var_*); pgbench, psql and go must be on the PATH, or pgbench in
# /usr/lib/postgresql/*/bin. Databases, all pgbench -i -s 10:
#
#   untracked  no capture
#   current    change tracking as sluice enables it (updates paired by one
#              EXCEPT per statement, the NOTIFY gated by an advisory lock)
#   listeners  current with the previous NOTIFY gate, a query of
#              sluice.listeners (the function edited with sed)
#   setpath    current with SET search_path = pg_catalog, pg_temp, as
#              the function had before (edited)
#   unpaired   current without the EXCEPT: every new image 'A' (edited)
#   bare       current without the EXCEPT and without the NOTIFY gate
#   shapequery current with the shape check as a query of pg_attribute on
#              every statement, as before sluice.columns_are (edited)
#
# Each round runs pgbench on every database in turn, after a CHECKPOINT,
# starting one database further each round (in a run that kept the
# order, the database run right after the untracked one measured slower
# in every round than a variant of it that costs more per statement):
# single (the default) one client, -M prepared, only "UPDATE
# pgbench_accounts SET abalance = abalance + 1 WHERE aid = :random"; tpcb
# the TPC-B-like mix with 4 clients and 2 threads, as bench/pgcapture;
# loop the server's time alone: one DO block runs 20,000 one-row UPDATEs
# ("seconds" is then unused), and the time per UPDATE is printed as
# µs/tx (TPS its inverse); txcpu the server's CPU time per transaction,
# which load on the machine barely changes: one DO block runs 5,000
# one-row UPDATEs, each committed (synchronous_commit off, so no flush
# is waited for), and the backend's CPU time (/proc/self/schedstat, read
# with pg_read_file: Linux and a superuser) per transaction is printed
# as µs/tx.
set -euo pipefail
url=${1:?server URL}
secs=${2:-6}
rounds=${3:-6}
mode=${4:-single}
cd "$(dirname "$0")/../.."
pgbench=$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/sluice" ./cmd/sluice
db() { echo "$url" | sed -E "s#/[^/?]*(\?|$)#/$1\1#"; }
psqlq() { psql -qAt -v ON_ERROR_STOP=1 "$@"; }
names=(untracked current listeners setpath unpaired bare shapequery)
for n in "${names[@]}"; do
	psqlq "$url" -c "DROP DATABASE IF EXISTS sluice_var_$n" -c "CREATE DATABASE sluice_var_$n"
	"$pgbench" -i -s 10 -q "$(db sluice_var_$n)" >/dev/null 2>&1
done
trap 'for n in "${names[@]}"; do psqlq "$url" -c "DROP DATABASE IF EXISTS sluice_var_$n WITH (FORCE)"; done; rm -rf "$work"' EXIT
# the triggers exist only while a stream is on the table
enable="ALTER TABLE pgbench_accounts SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM accounts_stream ON TABLE pgbench_accounts WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');"
for n in current listeners setpath unpaired bare shapequery; do
	"$work/sluice" sql --conn "$(db sluice_var_$n)" "$enable" >/dev/null
done
for n in current listeners setpath unpaired bare shapequery; do
	[ "$(psqlq "$(db sluice_var_$n)" -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'pgbench_accounts'::regclass AND tgname LIKE 'sluice_capture%'")" = 4 ] || { echo "no capture triggers in sluice_var_$n" >&2; exit 1; }
done
fn="SELECT pg_get_functiondef('sluice.cap_pgbench_accounts'::regproc)"
# the function names its table's oid (its shape check): each database's own
oid() { psqlq "$(db sluice_var_$1)" -c "SELECT 'pgbench_accounts'::regclass::oid"; }
cur=$(oid current)
psqlq "$(db sluice_var_current)" -c "$fn" >"$work/f0.sql"
for n in listeners setpath unpaired bare shapequery; do
	sed "s/'$cur'::pg_catalog.oid/'$(oid $n)'::pg_catalog.oid/g" "$work/f0.sql" >"$work/f.$n.sql"
done
listeners="EXISTS (SELECT 1 FROM sluice.listeners WHERE channel = 'sluice_changes_pgbench_accounts')"
paired="\(SELECT CASE WHEN EXISTS .* END\)"
sed -E "s/NOT \(pg_catalog.pg_try_advisory_lock.*\) THEN/$listeners THEN/" "$work/f.listeners.sql" | psqlq "$(db sluice_var_listeners)"
sed -E "s/^ LANGUAGE plpgsql$/ LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp/" "$work/f.setpath.sql" | psqlq "$(db sluice_var_setpath)"
sed -E "s/$paired/'A'/" "$work/f.unpaired.sql" | psqlq "$(db sluice_var_unpaired)"
sed -E -e "s/IF n OPERATOR\(pg_catalog.>\) 0 AND .* THEN/IF false THEN/" -e "s/$paired/'A'/" "$work/f.bare.sql" | psqlq "$(db sluice_var_bare)"
shape="sluice\.columns_are\(([^,]+), ('[^']*'::pg_catalog\.name\[\]), ('[^']*'::pg_catalog\.oid\[\]), ('[^']*'::pg_catalog\.int4\[\]), ([0-9]+)\) AND TG_RELID OPERATOR\(pg_catalog\.=\) [^ ]+ THEN"
query="(SELECT pg_catalog.count(*) FILTER (WHERE a.attname OPERATOR(pg_catalog.=) (\\2)[a.attnum] AND a.atttypid OPERATOR(pg_catalog.=) (\\3)[a.attnum] AND a.atttypmod OPERATOR(pg_catalog.=) (\\4)[a.attnum]) OPERATOR(pg_catalog.=) \\5 AND pg_catalog.count(*) OPERATOR(pg_catalog.=) \\5 FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) TG_RELID AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) IS TRUE THEN"
sed -E "s/$shape/$query/" "$work/f.shapequery.sql" | psqlq "$(db sluice_var_shapequery)"
grep -q "pg_attribute" <(psqlq "$(db sluice_var_shapequery)" -c "$fn") || { echo "shapequery variant not made" >&2; exit 1; }
grep -q "sluice.listeners" <(psqlq "$(db sluice_var_listeners)" -c "$fn") || { echo "listeners variant not made" >&2; exit 1; }
grep -q "search_path" <(psqlq "$(db sluice_var_setpath)" -c "$fn") || { echo "setpath variant not made" >&2; exit 1; }
grep -q "EXCEPT" <(psqlq "$(db sluice_var_current)" -c "$fn") || { echo "current has no EXCEPT" >&2; exit 1; }
! grep -q "EXCEPT" <(psqlq "$(db sluice_var_unpaired)" -c "$fn") || { echo "unpaired variant not made" >&2; exit 1; }
grep -q "IF false" <(psqlq "$(db sluice_var_bare)" -c "$fn") || { echo "bare variant not made" >&2; exit 1; }

txcpu="DO \$\$ DECLARE c0 bigint := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint; BEGIN FOR i IN 1..5000 LOOP UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = (i * 7919) % 1000 + 1; COMMIT; END LOOP; RAISE NOTICE 'per_second %', 5000 / ((split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - c0) / 1e9); END \$\$"
loop="DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN FOR i IN 1..20000 LOOP UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = (i * 7919) % 1000000 + 1; END LOOP; RAISE NOTICE 'per_second %', 20000 / extract(epoch FROM clock_timestamp() - t0); END \$\$"
printf '\\set aid random(1, 100000 * :scale)\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n' >"$work/upd.sql"
chmod 644 "$work/upd.sql"
chmod 755 "$work"
for r in $(seq "$rounds"); do
	k=$(((r - 1) % ${#names[@]}))
	for n in "${names[@]:$k}" "${names[@]:0:$k}"; do
		psqlq "$url" -c CHECKPOINT
		case $mode in
		tpcb) args=(-b tpcb-like -c 4 -j 2) ;;
		*) args=(-s 10 -c 1 -M prepared -f "$work/upd.sql") ;;
		esac
		if [ "$mode" = loop ]; then
			psqlq "$(db sluice_var_$n)" -c "VACUUM pgbench_accounts"
			tps=$(psqlq "$(db sluice_var_$n)" -c "$loop" 2>&1 | sed -n 's/.*per_second //p')
		elif [ "$mode" = txcpu ]; then
			tps=$(PGOPTIONS="-c synchronous_commit=off" psqlq "$(db sluice_var_$n)" -c "$txcpu" 2>&1 | sed -n 's/.*per_second //p')
		else
			tps=$("$pgbench" -n "${args[@]}" -T "$secs" "$(db sluice_var_$n)" 2>&1 | sed -n 's/tps = \([0-9.]*\) (without.*/\1/p')
		fi
		echo "$r $n $tps" >>"$work/runs"
		echo "round $r $n: $tps tps"
	done
done
echo
awk -v order="${names[*]}" '
	{ us[$2] = us[$2] " " 1e6 / $3 }
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		split(order, names, " ")
		base = median(us["untracked"])
		printf "%-10s %14s %12s %8s\n", "database", "µs/tx", "capture µs", "TPS"
		for (i = 1; i <= length(names); i++) { m = median(us[names[i]]); printf "%-10s %14.1f %+12.1f %7.2fx\n", names[i], m, m - base, base / m }
	}' "$work/runs"
