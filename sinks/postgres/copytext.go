package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

var _ runner.CopySinkTx = (*Tx)(nil)

// copyTextFormat is the only COPY text format a PostgreSQL target loads
// as it is: PostgreSQL's own (sources/postgres.CopyFormat).
const copyTextFormat = "postgres"

// copyTable is the TEMP table a merge into a target that already had rows
// loads a pass-through chunk into before INSERT … ON CONFLICT.
const copyTable = "sluice_copy"

// copyInputSettings read values in the form the source's COPY writes them
// (ISO dates, PostgreSQL-style intervals), for this transaction only.
const copyInputSettings = `SELECT set_config('datestyle', 'ISO, YMD', true), set_config('intervalstyle', 'postgres', true)`

// TargetEmpty reports whether the target has no row (runner.CopySinkTx).
func (t *Tx) TargetEmpty(ctx context.Context) (bool, error) {
	var empty bool
	if err := t.tx.QueryRow(ctx, "SELECT NOT EXISTS (SELECT FROM "+Quote(t.p.st.Table)+")").Scan(&empty); err != nil {
		return false, fmt.Errorf("postgres sink: is %s empty: %w", Quote(t.p.st.Table), err)
	}
	return empty, nil
}

// AcceptCopy implements runner.CopySinkTx: the target takes COPY text of
// format "postgres" when each projected column's target type is the
// source's (format_type), or reads its text the same way without
// narrowing it (numeric from numeric(p,s), text from varchar(n), varchar
// from varchar(n)); the mode is append, overwrite, errorifexists or ignore
// (COPY into the target), or merge without on_delete soft: with newKeys
// COPY into the target too, else COPY into a TEMP table and
// INSERT … ON CONFLICT (keys) DO UPDATE, which needs a PRIMARY KEY or
// UNIQUE index on the keys that is not deferrable.
func (t *Tx) AcceptCopy(ctx context.Context, format string, types []string, newKeys bool) (bool, string, error) {
	st := t.p.st
	if why := runner.CopyRefusal(st, format, copyTextFormat, len(types), len(t.c.columns)); why != "" {
		return false, why, nil
	}
	if !t.owned || t.err != nil || t.done {
		return false, "the transaction cannot COPY", nil
	}
	// The target as it is now (created or evolved by Begin), its types
	// as format_type names them, as the source's are.
	tt, ok, err := DescribeTable(ctx, t.tx, st.Table)
	if err != nil || !ok {
		return false, "", fmt.Errorf("postgres sink: %w (target %s exists: %t)", err, Quote(st.Table), ok)
	}
	target := tt.Schema()
	for i, name := range t.c.columns {
		j := target.Index(name)
		if j < 0 {
			return false, fmt.Sprintf("column %s is not in %s", name, Quote(st.Table)), nil
		}
		if !readsText(tt.Columns[j].PGType, types[i]) {
			return false, fmt.Sprintf("column %s of %s is %s, the source's is %s", name, Quote(st.Table), tt.Columns[j].PGType, types[i]), nil
		}
	}
	t.copyMerge = st.Mode == plan.ModeMerge && !newKeys
	if t.copyMerge {
		if sameSet(tt.Key, st.Keys) && tt.KeyDeferred {
			return false, "the primary key is deferrable (ON CONFLICT cannot use it)", nil
		}
		ok, err := hasUniqueKey(ctx, t.tx, st.Table, tt, st.Keys)
		if err != nil {
			return false, "", err
		}
		if !ok {
			return false, fmt.Sprintf("%s has no PRIMARY KEY or UNIQUE index on (%s) for ON CONFLICT", Quote(st.Table), strings.Join(st.Keys, ", ")), nil
		}
	}
	return true, "", nil
}

// readsText reports whether a column of type target reads the text of a
// value of type src as the same value.
func readsText(target, src string) bool {
	target, src = strings.ToLower(target), strings.ToLower(src)
	if target == src {
		return true
	}
	switch target {
	case "numeric":
		return strings.HasPrefix(src, "numeric(")
	case "text":
		return strings.HasPrefix(src, "character varying")
	case "character varying":
		return strings.HasPrefix(src, "character varying(")
	}
	return false
}

// CopyFrom implements runner.CopySinkTx: it loads r, PostgreSQL COPY text
// of the projected columns, into the target as AcceptCopy decided, and
// counts the rows as INSERTs written. On error the transaction is
// poisoned (Commit fails).
func (t *Tx) CopyFrom(ctx context.Context, r io.Reader) (int64, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.copyFrom(ctx, r)
	if err != nil {
		t.err = err
		return 0, err
	}
	t.written[cdc.OpInsert] += n
	return n, nil
}

func (t *Tx) copyFrom(ctx context.Context, r io.Reader) (int64, error) {
	st := t.p.st
	cols := QuoteList("", t.c.columns)
	if _, err := t.tx.Exec(ctx, copyInputSettings); err != nil {
		return 0, fmt.Errorf("postgres sink: %w", err)
	}
	into := Quote(st.Table)
	if t.copyMerge {
		into = "pg_temp." + copyTable
		if _, err := t.tx.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT %s FROM %s WITH NO DATA", copyTable, cols, Quote(st.Table))); err != nil {
			return 0, fmt.Errorf("postgres sink: stage a chunk: %w", err)
		}
	}
	tag, err := t.tx.Conn().PgConn().CopyFrom(ctx, r, fmt.Sprintf("COPY %s (%s) FROM STDIN", into, cols))
	if err != nil {
		return 0, fmt.Errorf("postgres sink: COPY into %s: %w", Quote(st.Table), err)
	}
	if !t.copyMerge {
		return tag.RowsAffected(), nil
	}
	ct, err := t.tx.Exec(ctx, t.copyUpsert())
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 0, err
		}
		return 0, fmt.Errorf("postgres sink: merge a chunk into %s: %w", Quote(st.Table), err)
	}
	if _, err := t.tx.Exec(ctx, "DROP TABLE pg_temp."+copyTable); err != nil {
		return 0, fmt.Errorf("postgres sink: %w", err)
	}
	return ct.RowsAffected(), nil
}

// copyUpsert is the INSERT … ON CONFLICT that merges copyTable into the
// target: each key's row replaces the target's. Its plan is a scan of
// copyTable with one probe of the key's index per row (no join the
// planner could make hash the whole target): a chunk costs the same at
// the end of a backfill as at the start.
func (t *Tx) copyUpsert() string {
	st := t.p.st
	cols := QuoteList("", t.c.columns)
	var set []string
	for _, c := range t.c.columns {
		if !st.IsKey(c) {
			set = append(set, Quote(c)+" = EXCLUDED."+Quote(c))
		}
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	keys := make([]string, len(st.Keys))
	for i, k := range st.Keys {
		keys[i] = k
		if j := st.Schema.Index(k); j >= 0 {
			keys[i] = t.c.columns[j]
		}
	}
	return fmt.Sprintf("INSERT INTO %s AS t (%s) SELECT %s FROM pg_temp.%s ON CONFLICT (%s) %s",
		Quote(st.Table), cols, cols, copyTable, QuoteList("", keys), action)
}
