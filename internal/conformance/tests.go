package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func seedOrders(e *env) {
	e.t.Helper()
	e.table(Orders)
	e.h.Apply(e.t, e.b,
		Insert("orders", 1, "Alice", D("1000.00"), "active"),
		Insert("orders", 2, "Bob", D("2000.00"), "active"),
		Insert("orders", 3, "Carol", D("500.00"), "active"))
	e.stream("s", "orders", "", false)
	e.h.Apply(e.t, e.b, Insert("orders", 4, "Dave", D("3000.00"), "active"))
	e.h.Apply(e.t, e.b, Update("orders", Key(1), Set("amount", D("1500.00"))))
	e.h.Apply(e.t, e.b, Delete("orders", 3))
}

var seedWant = []Row{
	Ins(4, "Dave", D("3000.00"), "active"),
	UB(1, "Alice", D("1000.00"), "active"),
	UA(1, "Alice", D("1500.00"), "active"),
	Del(3, "Carol", D("500.00"), "active"),
}

func testReadDoesNotConsume(t *testing.T, h Harness) {
	e := open(t, h)
	seedOrders(e)
	info1, a, rp1 := e.read("s")
	info2, b, rp2 := e.read("s")
	compare(t, Orders.Schema, a, seedWant)
	compare(t, Orders.Schema, b, seedWant)
	// The offset must not move. The two read points may differ: a
	// PostgreSQL read point lists the transactions running anywhere in
	// the cluster below its xmax, and one that ends between the reads
	// (another database's) changes it without changing what it covers;
	// the changes read, compared above and below, are the same.
	if !info1.Offset.Equal(info2.Offset) {
		t.Errorf("two reads: offsets %s, %s (read points %s, %s)", info1.Offset, info2.Offset, rp1, rp2)
	}
	for i := range a {
		if a[i].CommitVersion != b[i].CommitVersion || !a[i].CommitTime.Equal(b[i].CommitTime) {
			t.Errorf("change %d: metadata differs between reads", i)
		}
	}
}

func testAdvanceConsumes(t *testing.T, h Harness) {
	e := open(t, h)
	seedOrders(e)
	info, _, rp := e.read("s")
	e.advance(info, rp)
	if got := e.info("s").Offset; !got.Equal(rp) {
		t.Errorf("offset after Advance = %s, want %s", got, rp)
	}
	_, got, _ := e.read("s")
	compare(t, Orders.Schema, got, nil)
	e.h.Apply(t, e.b, Update("orders", Key(2), Set("status", "vip")))
	_, got, _ = e.read("s")
	compare(t, Orders.Schema, got, []Row{
		UB(2, "Bob", D("2000.00"), "active"),
		UA(2, "Bob", D("2000.00"), "vip"),
	})
}

// A consumer that keeps only some change types still moves the offset to
// the read point: the dropped changes are gone for good.
func testFilteredConsumed(t *testing.T, h Harness) {
	e := open(t, h)
	seedOrders(e)
	info, got, rp := e.read("s")
	var kept int
	for _, c := range got {
		if c.Op == cdc.OpInsert || c.Op == cdc.OpUpdateAfter {
			kept++
		}
	}
	if kept != 2 {
		t.Fatalf("kept %d changes, want 2", kept)
	}
	e.advance(info, rp)
	_, got, _ = e.read("s")
	compare(t, Orders.Schema, got, nil)
}

func testVersionsAndTimes(t *testing.T, h Harness) {
	e := open(t, h)
	start := time.Now().Add(-2 * time.Second)
	seedOrders(e)
	info, first, rp := e.read("s")
	end := time.Now().Add(2 * time.Second)
	for i, c := range first {
		if c.CommitTime.Before(start) || c.CommitTime.After(end) {
			t.Errorf("change %d: commit time %v not within the test's run", i, c.CommitTime)
		}
	}
	// The seed's three transactions: strictly increasing across them.
	if !(first[0].CommitVersion < first[1].CommitVersion && first[2].CommitVersion < first[3].CommitVersion) {
		t.Errorf("versions %d %d %d %d do not increase with commit order",
			first[0].CommitVersion, first[1].CommitVersion, first[2].CommitVersion, first[3].CommitVersion)
	}
	e.advance(info, rp)
	e.h.Apply(t, e.b, Insert("orders", 5, "Eve", D("1.00"), "x"))
	_, next, _ := e.read("s")
	if len(next) != 1 || next[0].CommitVersion <= first[len(first)-1].CommitVersion {
		t.Errorf("a later commit's version must exceed every earlier one: %v after %v", next, first)
	}
}

func testAdvanceCAS(t *testing.T, h Harness) {
	e := open(t, h)
	seedOrders(e)
	info, _, rp := e.read("s")
	e.advance(info, rp)
	// info.Offset is stale now.
	err := e.src.Advance(e.ctx, info, info.Offset, rp)
	if !errors.Is(err, runner.ErrOffsetMoved) {
		t.Errorf("Advance from a stale offset: %v, want ErrOffsetMoved", err)
	}
}

func testPurge(t *testing.T, h Harness) {
	if h.LogRows == nil {
		t.Skip("harness cannot observe the change log")
	}
	e := open(t, h)
	e.table(Orders)
	e.stream("a", "orders", "", false)
	e.stream("b", "orders", dsl.ModeAppendOnly, false)
	e.h.Apply(t, e.b, Insert("orders", 1, "Alice", D("1.00"), "x"))
	e.h.Apply(t, e.b, Update("orders", Key(1), Set("amount", D("2.00"))))
	if n := h.LogRows(t, e.b, "orders"); n == 0 {
		t.Fatalf("change log empty before any stream consumed")
	}
	ia, _, rpa := e.read("a")
	e.advance(ia, rpa)
	if n := h.LogRows(t, e.b, "orders"); n == 0 {
		t.Errorf("change log purged while stream b has not consumed it")
	}
	ib, got, rpb := e.read("b")
	compare(t, Orders.Schema, got, []Row{Ins(1, "Alice", D("1.00"), "x")})
	e.advance(ib, rpb)
	if n := h.LogRows(t, e.b, "orders"); n != 0 {
		t.Errorf("change log has %d rows after every stream consumed, want 0", n)
	}
	_, got, _ = e.read("a")
	compare(t, Orders.Schema, got, nil)
}

func testErrors(t *testing.T, h Harness) {
	e := open(t, h)
	e.exec(&dsl.CreateTable{Table: "orders", Schema: Orders.Schema})
	_, err := e.ex.Exec(e.ctx, &dsl.CreateStream{Stream: "s", Table: "orders"})
	if err == nil || !strings.Contains(err.Error(), "'change_tracking' = 'true'") {
		t.Errorf("stream on an untracked table: %v, want an error saying how to enable change tracking", err)
	}
	e.exec(&dsl.CreateTable{Table: "events", Schema: Events.Schema})
	e.exec(&dsl.SetChangeTracking{Table: "events", Enabled: true})
	_, err = e.ex.Exec(e.ctx, &dsl.CreateStream{Stream: "s", Table: "events", Mode: dsl.ModeStandard})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "primary key") {
		t.Errorf("STANDARD stream on a table without key: %v, want a primary-key error", err)
	}
	e.exec(&dsl.SetChangeTracking{Table: "orders", Enabled: true})
	e.stream("orders_stream", "orders", "", false)
	_, err = e.ex.Exec(e.ctx, &dsl.SetChangeTracking{Table: "orders", Enabled: false})
	if err == nil || !strings.Contains(err.Error(), "orders_stream") {
		t.Errorf("disable change tracking with a stream: %v, want an error naming orders_stream", err)
	}
	_, err = e.src.Stream(e.ctx, plan.Source{Stream: "nope"})
	if !errors.Is(err, runner.ErrNoStream) {
		t.Errorf("Stream(nope): %v, want ErrNoStream", err)
	}
	_, err = e.ex.Exec(e.ctx, &dsl.DropStream{Stream: "nope"})
	if !errors.Is(err, runner.ErrNoStream) {
		t.Errorf("DROP TABLE STREAM nope: %v, want ErrNoStream", err)
	}
	e.exec(&dsl.DropStream{Stream: "nope", IfExists: true})
	_, err = e.ex.Exec(e.ctx, &dsl.SetChangeTracking{Table: "missing", Enabled: true})
	if err == nil {
		t.Errorf("change tracking on a missing table: no error")
	}
	_, err = e.ex.Exec(e.ctx, &dsl.CreateStream{Stream: "orders_stream", Table: "orders"})
	if err == nil {
		t.Errorf("CREATE TABLE STREAM of an existing name: no error")
	}
	e.exec(&dsl.CreateStream{Stream: "orders_stream", Table: "orders", IfNotExists: true})
}

func testIncarnation(t *testing.T, h Harness) {
	e := open(t, h)
	seedOrders(e)
	first := e.info("s")
	e.exec(&dsl.CreateStream{Stream: "s", Table: "orders", OrReplace: true})
	second := e.info("s")
	if first.ID == second.ID || first.ID == "" {
		t.Errorf("IDs %q and %q: a replaced stream needs a new ID", first.ID, second.ID)
	}
	_, got, _ := e.read("s")
	compare(t, Orders.Schema, got, nil)
	if err := e.src.Advance(e.ctx, first, first.Offset, second.Offset); err == nil {
		t.Errorf("Advance of the dropped incarnation succeeded")
	}
	rs := e.exec(&dsl.ShowStreams{})
	if rs == nil || len(rs.Rows) != 1 {
		t.Errorf("SHOW TABLE STREAMS: %v, want one row", rs)
	}
	rs = e.exec(&dsl.DescribeStream{Stream: "s"})
	if rs == nil || len(rs.Rows) != 1 {
		t.Errorf("DESCRIBE TABLE STREAM: %v, want one row", rs)
	}
}
