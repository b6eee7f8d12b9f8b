package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// TestOneWriterPerSink: while one Begin's transaction is open, another
// Begin on the same sink waits and returns only after it ended; every way
// a transaction ends (Commit, Rollback, a Begin that fails) lets the next
// one in (the gate is free again), and rows of both transactions are
// stored.
func TestOneWriterPerSink(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := New(db, nil)
	sp, err := s.PrepareSink(ctx, stage("t", plan.ModeAppend, nil, orders))
	if err != nil {
		t.Fatal(err)
	}
	free := func(when string) {
		t.Helper()
		if n := len(s.writer); n != 0 {
			t.Fatalf("%s: the writer gate is held", when)
		}
	}
	tx1, err := sp.Begin(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.writer) != 1 {
		t.Fatal("an open transaction does not hold the writer gate")
	}
	type begun struct {
		tx  runner.SinkTx
		err error
	}
	second := make(chan begun, 1)
	go func() {
		tx, err := sp.Begin(ctx, "b")
		second <- begun{tx, err}
	}()
	select {
	case b := <-second:
		t.Fatalf("a second Begin returned (err %v) while the first transaction was open", b.err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx1.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "x", dec("1.00"), "new")}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx1.Commit(ctx, cpAt("1")); err != nil {
		t.Fatal(err)
	}
	b := <-second
	if b.err != nil {
		t.Fatalf("second Begin after the first committed: %v", b.err)
	}
	if err := b.tx.Write(ctx, []cdc.Change{ch(cdc.OpInsert, 2, int64(2), "y", dec("2.00"), "new")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.tx.Commit(ctx, cpAt("2")); err != nil {
		t.Fatal(err)
	}
	free("after two commits")
	checkRows(t, dump(t, db, "t", "id"), []string{"1|x|1.00|new", "2|y|2.00|new"})

	tx3, err := sp.Begin(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx3.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	free("after a rollback")

	failing, err := s.PrepareSink(ctx, stage("t", plan.ModeErrorIfExists, nil, orders))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failing.Begin(ctx, "d"); !errors.Is(err, runner.ErrTargetExists) {
		t.Fatalf("Begin with errorifexists on an existing target: %v, want ErrTargetExists", err)
	}
	free("after a Begin that failed")
}
