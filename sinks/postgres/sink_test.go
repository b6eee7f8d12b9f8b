package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

var ordersSchema = cdc.Schema{Columns: []cdc.Column{
	{Name: "id", Type: cdc.TypeBigInt},
	{Name: "user", Type: cdc.TypeString},
	{Name: "amount", Type: cdc.Decimal(38, 10)},
}}

func TestAppendModesAndExactTypes(t *testing.T) {
	p := openPool(t)
	sk := New(p, 150000, nil)
	ctx := context.Background()
	s := cdc.Schema{Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeBigInt},
		{Name: "user", Type: cdc.TypeString},
		{Name: "naïve ✓", Type: cdc.Decimal(38, 10)},
		{Name: "at", Type: cdc.TypeTimestamp},
		{Name: "d", Type: cdc.TypeDate},
		{Name: "bin", Type: cdc.TypeBinary},
		{Name: "f", Type: cdc.Type{Kind: cdc.KindFloat}},
		{Name: "ok", Type: cdc.TypeBoolean},
	}}
	zone := time.FixedZone("x", 5*3600+1800)
	big := dec("1234567890123456789012345678.0123456789")
	row := []any{int64(1), "ünïcode \"q\"", big, time.Date(2024, 1, 2, 3, 4, 5, 123456000, zone), time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), []byte{0, 1, 255}, 0.1, true}
	st := stage("order", plan.ModeAppend, nil, s)
	stats, err := runBatches(t, sk, st, cpAt("p1"), []cdc.Change{ch(cdc.OpInsert, 1, row...), ch(cdc.OpInsert, 2, int64(2), nil, nil, nil, nil, nil, nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Written[cdc.OpInsert] != 2 {
		t.Errorf("written: %v", stats.Written)
	}
	var got any
	if err := p.QueryRow(ctx, `SELECT "naïve ✓" FROM "order" WHERE id = 1`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if d, err := Decode(got, cdc.Decimal(38, 10)); err != nil || !d.(decimal.Decimal).Equal(big) {
		t.Errorf("DECIMAL(38,10) round trip: %v %v", d, err)
	}
	schema, ok, err := sk.Target(ctx, "order")
	if err != nil || !ok {
		t.Fatal(err, ok)
	}
	if schema.Columns[2].Type != cdc.Decimal(38, 10) || schema.Columns[3].Type != cdc.TypeTimestamp {
		t.Errorf("target schema: %+v", schema.Columns)
	}
	checkRows(t, "append", dump(t, p, "order", "id"), []string{
		"1|ünïcode \"q\"|1234567890123456789012345678.0123456789|2024-01-01T21:34:05.123456Z|2024-02-29T00:00:00Z|[0 1 255]|0.1|true",
		"2|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	})
	// Append again: rows add up; the checkpoint moved in the same transaction.
	if _, err := runBatches(t, sk, st, cpAt("p2"), []cdc.Change{ch(cdc.OpInsert, 3, int64(3), "c", dec("1.5"), nil, nil, nil, nil, nil)}); err != nil {
		t.Fatal(err)
	}
	cp, ok, err := ReadCheckpoint(ctx, p, "job1")
	if err != nil || !ok || cp.Offset.String() != "p2" {
		t.Errorf("checkpoint: %+v %v %v", cp, ok, err)
	}
	// Overwrite replaces the rows.
	st.Mode = plan.ModeOverwrite
	if _, err := runBatches(t, sk, st, cpAt("p3"), []cdc.Change{ch(cdc.OpInsert, 4, int64(9), "z", dec("-0.0000000001"), nil, nil, nil, nil, nil)}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "overwrite", dump(t, p, "order", "id"), []string{"9|z|-0.0000000001|NULL|NULL|NULL|NULL|NULL"})
	// errorifexists and ignore on an existing target.
	st.Mode = plan.ModeErrorIfExists
	if _, err := runBatches(t, sk, st, cpAt("p4")); !errors.Is(err, runner.ErrTargetExists) {
		t.Errorf("errorifexists: %v", err)
	}
	st.Mode = plan.ModeIgnore
	if _, err := runBatches(t, sk, st, cpAt("p4")); !errors.Is(err, ErrIgnored) {
		t.Errorf("ignore: %v", err)
	}
	st2 := stage("fresh", plan.ModeErrorIfExists, nil, ordersSchema)
	if _, err := runBatches(t, sk, st2, cpAt("p5"), []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("2"))}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "errorifexists creates", dump(t, p, "fresh", "id"), []string{"1|a|2"})
}

func TestValueErrorNamesKeyAndColumnAndStoresNothing(t *testing.T) {
	p := openPool(t)
	sk := New(p, 150000, nil)
	exec(t, p, `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text, amount numeric(5,2))`)
	st := stage("tgt", plan.ModeMerge, []string{"id"}, ordersSchema)
	_, err := runBatches(t, sk, st, cpAt("p1"), []cdc.Change{ch(cdc.OpInsert, 1, int64(1), "a", dec("1.5")), ch(cdc.OpInsert, 2, int64(7), "b", dec("123456.5"))})
	var ve *cdc.ValueError
	if !errors.As(err, &ve) || ve.Column != "amount" || !strings.Contains(err.Error(), "id=7") {
		t.Fatalf("want a value error naming id=7 and amount, got %v", err)
	}
	checkRows(t, "nothing stored", dump(t, p, "tgt", "id"), nil)
	if _, ok, _ := ReadCheckpoint(context.Background(), p, "job1"); ok {
		t.Error("checkpoint stored despite the error")
	}
	// A text value that is not a number, into a numeric column.
	_, err = runBatches(t, sk, stage("tgt", plan.ModeAppend, nil, cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeString}}}), cpAt("p1"),
		[]cdc.Change{ch(cdc.OpInsert, 1, "seven")})
	if !errors.As(err, &ve) || ve.Column != "id" {
		t.Errorf("text into bigint: %v", err)
	}
}

func mergeCases() []cdc.Change {
	return []cdc.Change{
		ch(cdc.OpInsert, 1, int64(1), "a", dec("1.10")),
		ch(cdc.OpInsert, 1, int64(2), "b", dec("2.20")),
		ch(cdc.OpUpdateBefore, 2, int64(1), "a", dec("1.10")),
		ch(cdc.OpUpdateAfter, 2, int64(1), "a2", dec("1.11")),
		ch(cdc.OpDelete, 3, int64(2), "b", dec("2.20")),
		ch(cdc.OpInsert, 4, int64(3), "c", dec("3.30")),
		ch(cdc.OpDelete, 5, int64(3), "c", dec("3.30")),
		ch(cdc.OpInsert, 6, int64(3), "c2", dec("3.31")),
	}
}

func TestMergeFullAndPartialRows(t *testing.T) {
	for _, version := range []int{150000, 140000} {
		t.Run(map[int]string{150000: "MERGE", 140000: "ON CONFLICT"}[version], func(t *testing.T) {
			p := openPool(t)
			sk := New(p, version, nil)
			exec(t, p, `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text, amount numeric(38,10))`,
				`INSERT INTO tgt VALUES (2, 'old', 0), (9, 'keep', 9)`)
			st := stage("tgt", plan.ModeMerge, []string{"id"}, ordersSchema)
			st.PartialRows = true // the second run stages partial rows
			cs := mergeCases()
			stats, err := runBatches(t, sk, st, cpAt("p1"), cs[:3], cs[3:])
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, "merge", dump(t, p, "tgt", "id"), []string{"1|a2|1.11", "3|c2|3.31", "9|keep|9"})
			if stats.Written[cdc.OpDelete] != 1 || stats.Written[cdc.OpUpdateAfter] != 1 || stats.Written[cdc.OpInsert] != 1 {
				t.Errorf("written: %v", stats.Written)
			}
			// Partial rows: only carried columns are set; a re-insert after a
			// DELETE has NULL in the columns not carried.
			stats, err = runBatches(t, sk, st, cpAt("p2"), []cdc.Change{
				partial(cdc.OpUpdateAfter, 10, "110", int64(1), "a3", nil),
				partial(cdc.OpUpdateAfter, 11, "101", int64(1), nil, dec("7.5")),
				partial(cdc.OpUpdateAfter, 12, "101", int64(9), nil, dec("10")),
				partial(cdc.OpUpdateAfter, 13, "110", int64(20), "new", nil),
				ch(cdc.OpDelete, 14, int64(3), nil, nil),
				partial(cdc.OpUpdateAfter, 15, "101", int64(3), nil, dec("4")),
			})
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, "partial", dump(t, p, "tgt", "id"), []string{"1|a3|7.5", "3|NULL|4", "9|keep|10", "20|new|NULL"})
		})
	}
}

func TestMergeCreatesTargetWithKey(t *testing.T) {
	p := openPool(t)
	sk := New(p, 150000, nil)
	st := stage("new target", plan.ModeMerge, []string{"id"}, ordersSchema)
	if _, err := runBatches(t, sk, st, cpAt("p1"), mergeCases()); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "created", dump(t, p, "new target", "id"), []string{"1|a2|1.11", "3|c2|3.31"})
	s, _, _ := sk.Target(context.Background(), "new target")
	if len(s.Key) != 1 || s.Key[0] != "id" {
		t.Errorf("key: %v", s.Key)
	}
}

func TestFallbackSQLNeedsUniqueKey(t *testing.T) {
	p := openPool(t)
	sk := New(p, 140000, nil)
	exec(t, p, `CREATE TABLE nokey (id bigint, "user" text, amount numeric(38,10))`)
	_, err := sk.PrepareSink(context.Background(), stage("nokey", plan.ModeMerge, []string{"id"}, ordersSchema))
	if err == nil || !strings.Contains(err.Error(), "ON CONFLICT") {
		t.Errorf("want an error about the unique key, got %v", err)
	}
	// With MERGE (15+) no unique key is needed.
	sk15 := New(p, 150000, nil)
	pl, err := sk15.PrepareSink(context.Background(), stage("nokey", plan.ModeMerge, []string{"id"}, ordersSchema))
	if err != nil {
		t.Fatal(err)
	}
	var merge bool
	for _, s := range pl.Steps() {
		merge = merge || strings.HasPrefix(s.SQL, "MERGE INTO")
	}
	if !merge {
		t.Error("no MERGE step on 15")
	}
	exec(t, p, `CREATE UNIQUE INDEX ON nokey (id)`)
	pl, err = sk.PrepareSink(context.Background(), stage("nokey", plan.ModeMerge, []string{"id"}, ordersSchema))
	if err != nil {
		t.Fatal(err)
	}
	var onConflict bool
	for _, s := range pl.Steps() {
		if strings.HasPrefix(s.SQL, "MERGE") {
			t.Errorf("MERGE step on 14: %s", s.SQL)
		}
		onConflict = onConflict || strings.Contains(s.SQL, "ON CONFLICT") && strings.Contains(s.What, "PostgreSQL < 15")
	}
	if !onConflict {
		t.Error("plan does not say it uses ON CONFLICT")
	}
}

func TestSQLMergeClausesAndCardinality(t *testing.T) {
	p := openPool(t)
	sk := New(p, 150000, nil)
	exec(t, p, `CREATE TABLE tgt (id bigint PRIMARY KEY, "user" text, amount numeric(38,10))`,
		`INSERT INTO tgt VALUES (1, 'a', 1), (2, 'b', 2)`)
	s := cdc.Schema{Columns: append([]cdc.Column{{Name: "op", Type: cdc.TypeString}}, ordersSchema.Columns...)}
	st := stage("tgt", plan.ModeMerge, nil, s)
	st.Merge = &plan.Merge{TargetAlias: "t", SourceAlias: "s", On: []plan.KeyPair{{Target: "id", Source: "id"}},
		Clauses: []plan.WhenClause{
			{Matched: true, Cond: &plan.Expr{Text: "s.op = 'DELETE'"}, Action: plan.ActionDelete},
			{Matched: true, Action: plan.ActionUpdate, Set: []plan.Assignment{{Column: "amount", Value: plan.Expr{Text: "t.amount + s.amount"}}}},
			{Matched: false, Cond: &plan.Expr{Text: "s.op <> 'DELETE'"}, Action: plan.ActionInsert, InsertColumns: []string{"id", "user", "amount"},
				InsertValues: []plan.Expr{{Text: "s.id"}, {Text: "upper(s.user)"}, {Text: "s.amount"}}},
		}}
	_, err := runBatches(t, sk, st, cpAt("p1"), []cdc.Change{
		ch(cdc.OpDelete, 1, "DELETE", int64(1), "a", dec("1")),
		ch(cdc.OpInsert, 2, "INSERT", int64(2), "b", dec("0.5")),
		ch(cdc.OpInsert, 3, "INSERT", int64(3), "c", dec("3")),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "merge into", dump(t, p, "tgt", "id"), []string{"2|b|2.5", "3|C|3"})
	_, err = runBatches(t, sk, st, cpAt("p2"), []cdc.Change{
		ch(cdc.OpInsert, 4, "INSERT", int64(2), "b", dec("1")),
		ch(cdc.OpInsert, 5, "INSERT", int64(2), "b", dec("1")),
	})
	if !errors.Is(err, ErrMergeCardinality) || !strings.Contains(err.Error(), "id=2") || !strings.Contains(err.Error(), "__change_type") {
		t.Errorf("cardinality: %v", err)
	}
	checkRows(t, "unchanged", dump(t, p, "tgt", "id"), []string{"2|b|2.5", "3|C|3"})
}
