#!/usr/bin/env bash
# The seed's orders walkthrough (seeds/000) on embedded SQLite, from a clean
# database: change tracking, a table stream, the seed's three changes, a
# filtered append job and a MERGE job, then a second run that consumes
# nothing. Needs only Go. Usage: bash examples/orders/walkthrough.sh [DIR]
# Without DIR it works in a temporary directory and removes it on exit
# (the binary and the database); with DIR it keeps them there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ $# -ge 1 ]; then
  work=$1
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
bin="$work/sluice"
(cd "$root" && go build -o "$bin" ./cmd/sluice)
export SLUICE_CONN="sqlite:$work/orders.db"
rm -f "$work/orders.db"*

step() { printf '\n$ sluice %s\n' "$*"; "$bin" "$@"; }

echo "# database: $SLUICE_CONN"
step sql -f "$here/setup.sql"
step sql -f "$here/changes.sql"
echo
echo "# The stream's pending changes (the seed's show()): Dave INSERT,"
echo "# Alice UPDATE_BEFORE 1000.00 / UPDATE_AFTER 1500.00, Carol DELETE."
step preview orders_stream
step plan "$here/orders_append.yaml"
step run "$here/orders_append.yaml" "$here/orders_merge.sql"
step sql "SELECT * FROM orders_target ORDER BY id"
step sql "SELECT * FROM orders_replica ORDER BY id"
echo
echo "# A second run consumes nothing: the offsets moved when the first run committed."
step run "$here/orders_append.yaml" "$here/orders_merge.sql"
step preview orders_stream
