package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
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
		want  error
	}{
		{"file NORMAL", "NORMAL", ErrNotDurable},
		{"file OFF", "OFF", ErrNotDurable},
		{"file FULL", "FULL", nil},
		{"file EXTRA", "EXTRA", nil},
		{"memory NORMAL", "NORMAL", nil},
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
			if err := durable(ctx, conn); !errors.Is(err, tc.want) {
				t.Fatalf("durable = %v, want %v", err, tc.want)
			}
		})
	}
}
