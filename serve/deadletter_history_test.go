package serve

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestHistoryDeadLettered: the run history keeps a run's dead-lettered
// count, on SQLite and PostgreSQL, a history created before the column
// existed gains it (old runs read 0), and --format json prints it.
func TestHistoryDeadLettered(t *testing.T) {
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 2, 3, 4, 0, time.UTC)
	check := func(t *testing.T, h History) {
		if _, err := h.Record(ctx, &Run{Job: "j", Start: at, End: at, Status: StatusCommitted,
			Read: map[cdc.Op]int64{cdc.OpInsert: 9}, Written: map[cdc.Op]int64{cdc.OpInsert: 6}, DeadLettered: 3}); err != nil {
			t.Fatal(err)
		}
		runs, err := h.List(ctx, "j", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].DeadLettered != 3 || runs[1].DeadLettered != 0 {
			t.Fatalf("runs: %+v", runs)
		}
		b, err := json.Marshal(runs[0])
		if err != nil || !strings.Contains(string(b), `"dead_lettered":3`) {
			t.Errorf("JSON %s, %v: want dead_lettered 3", b, err)
		}
		if b, _ := json.Marshal(runs[1]); strings.Contains(string(b), "dead_lettered") {
			t.Errorf("JSON of a run without dead letters: %s", b)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "h.db")
		old := openSQLite(t, path, "n1", nil)
		if _, err := old.Record(ctx, &Run{Job: "j", Start: at, End: at, Status: StatusCommitted}); err != nil {
			t.Fatal(err)
		}
		if _, err := old.db.ExecContext(ctx, "ALTER TABLE "+RunsTable+" DROP COLUMN dead_lettered"); err != nil {
			t.Fatal(err)
		}
		old.Close()
		check(t, openSQLite(t, path, "n1", nil))
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		old := openPG(t, url, "n1")
		if _, err := old.Record(ctx, &Run{Job: "j", Start: at, End: at, Status: StatusCommitted}); err != nil {
			t.Fatal(err)
		}
		if _, err := old.pool.Exec(ctx, "ALTER TABLE "+pgRuns+" DROP COLUMN dead_lettered"); err != nil {
			t.Fatal(err)
		}
		old.Close()
		check(t, openPG(t, url, "n1"))
	})
}
