package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestSinkCommitIsDurable: a sink transaction runs with PRAGMA synchronous
// = FULL on its connection from its BEGIN (sluice opens databases with
// NORMAL, which in WAL mode fsyncs only at checkpoints), and SQLite refuses
// to lower it inside the transaction, so the commit the runner waits for
// before moving the source's offset is on disk.
func TestSinkCommitIsDurable(t *testing.T) {
	ctx := context.Background()
	s := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "name", Type: cdc.TypeString}}}
	db := openDB(t)
	var before int
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&before); err != nil || before != 1 {
		t.Fatalf("a pool connection's synchronous = %d, %v; want 1 (NORMAL) before the sink sets it", before, err)
	}
	sp, err := New(db, nil).PrepareSink(ctx, stage("tgt", plan.ModeAppend, nil, s))
	if err != nil {
		t.Fatal(err)
	}
	rtx, err := sp.Begin(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	tx := rtx.(*Tx)
	var level int
	if err := tx.conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level); err != nil || level != 2 {
		t.Fatalf("synchronous in the sink transaction = %d, %v; want 2 (FULL)", level, err)
	}
	if _, err := tx.conn.ExecContext(ctx, "PRAGMA synchronous = OFF"); err == nil {
		t.Fatal("SQLite let the sink transaction lower synchronous")
	}
	if err := tx.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, cpAt("p1")); err != nil {
		t.Fatal(err)
	}
	checkRows(t, dump(t, db, "tgt", "id"), []string{"1|a"})
	if off := storedOffset(t, db, "job1"); off != "p1" {
		t.Errorf("checkpoint = %q, want p1", off)
	}
}

// TestDurableRefusesNormal: the commit check refuses a file database's
// connection below FULL with ErrNotDurable, and accepts FULL and memory.
func TestDurableRefusesNormal(t *testing.T) {
	ctx := context.Background()
	mem, err := sqlitex.Open(ctx, sqlitex.Location{Path: ":memory:", Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	file, err := sqlitex.Open(ctx, sqlitex.Location{Path: filepath.Join(t.TempDir(), "d.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name  string
		level string
		lazy  bool // BeginDeferred's check
		want  error
	}{
		{"file NORMAL", "NORMAL", false, ErrNotDurable},
		{"file OFF", "OFF", false, ErrNotDurable},
		{"file FULL", "FULL", false, nil},
		{"file EXTRA", "EXTRA", false, nil},
		{"memory NORMAL", "NORMAL", false, nil},
		{"file NORMAL deferred", "NORMAL", true, nil},
		{"file OFF deferred", "OFF", true, ErrNotDurable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := file
			if tc.name[:6] == "memory" {
				d = mem
			}
			conn, err := d.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = "+tc.level); err != nil {
				t.Fatal(err)
			}
			if err := durable(ctx, conn, tc.lazy); !errors.Is(err, tc.want) {
				t.Fatalf("durable = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestBeginDeferredSkipsTheFsync: BeginDeferred's transaction runs with
// synchronous = NORMAL (WAL: no fsync at commit) and commits rows and
// checkpoint together; the next Begin of the same database is back at
// FULL, and its commit syncs the WAL that holds the deferred commit too.
func TestBeginDeferredSkipsTheFsync(t *testing.T) {
	ctx := context.Background()
	s := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "name", Type: cdc.TypeString}}}
	db := openDB(t)
	sp, err := New(db, nil).PrepareSink(ctx, stage("tgt", plan.ModeAppend, nil, s))
	if err != nil {
		t.Fatal(err)
	}
	for i, begin := range []func(context.Context, string) (runner.SinkTx, error){sp.(*Plan).BeginDeferred, sp.Begin} {
		rtx, err := begin(ctx, "job1")
		if err != nil {
			t.Fatal(err)
		}
		tx := rtx.(*Tx)
		var level int
		if err := tx.conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level); err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 2}[i]; level != want {
			t.Fatalf("transaction %d: synchronous = %d, want %d", i+1, level, want)
		}
		if err := tx.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 1, int64(i+1), "a")}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx, cpAt(fmt.Sprintf("p%d", i+1))); err != nil {
			t.Fatal(err)
		}
		if off := storedOffset(t, db, "job1"); off != fmt.Sprintf("p%d", i+1) {
			t.Errorf("checkpoint = %q, want p%d", off, i+1)
		}
	}
	checkRows(t, dump(t, db, "tgt", "id"), []string{"1|a", "2|a"})
}
