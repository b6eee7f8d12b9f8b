package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
)

// errNotAppend is returned by Tx.InsertRelation on a transaction of a
// keyed mode (merge, history) or a SQL MERGE job: those apply a change
// relation with ApplyRelation.
var errNotAppend = errors.New("sqlite sink: InsertRelation needs an append-like mode")

// insertRelationSQL is the INSERT … SELECT that copies the projected
// columns of relation into st's target, whose columns have types tt
// (aligned with st.Schema), in the relation's order.
func insertRelationSQL(st *plan.SinkStage, tt []cdc.Type, relation string) string {
	s := st.Schema
	cols := make([]string, len(s.Columns))
	vals := make([]string, len(s.Columns))
	kt := keyTextSQL(s, st.Keys, "__r")
	for i, c := range s.Columns {
		cols[i] = sqlitex.Quote(c.Name)
		vals[i] = fitExpr("__r."+sqlitex.Quote(c.Name), c.Type, tt[i], c.Name, kt)
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS __r",
		sqlitex.Quote(st.Table), strings.Join(cols, ", "), strings.Join(vals, ", "), relation)
}

// InsertRelation inserts every row of relation into the target of an
// append-like transaction (modes append, overwrite, errorifexists,
// ignore), in the relation's order, with one INSERT … SELECT: relation is
// a parenthesized SELECT whose columns include the projected ones, named
// and stored as SinkStage.Schema says (values in the storage form of
// their types). A column whose target type differs is converted in SQL
// (sluice_sink_fit), failing with a *cdc.ValueError that names the row's
// key and the column. Every row counts as an INSERT in the Stats Commit
// returns. It returns the number of rows inserted. Bulk copies inside the
// sink's database (a backfill from the same or an attached SQLite file)
// call it on a Tx from Attach. An error poisons the transaction.
func (t *Tx) InsertRelation(ctx context.Context, relation string) (int64, error) {
	return t.InsertRelationChecked(ctx, relation, nil)
}

// InsertRelationChecked is InsertRelation for a relation whose values in
// the DECIMAL columns checked (sink column names) already pass sluice's
// DECIMAL check (sqlitex.DecimalCheckSQL): a bulk copy from a column that
// carries the same CHECK, copied in its stored form. When the target's
// only CHECK constraints are those columns' DECIMAL checks, the INSERT
// runs without them (PRAGMA ignore_check_constraints, set back after it):
// their GLOBs cost a fifth of a copy's time. Otherwise, and for names
// that are not DECIMAL columns of the sink, it is InsertRelation.
func (t *Tx) InsertRelationChecked(ctx context.Context, relation string, checked []string) (n int64, err error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.done {
		return 0, errors.New("sqlite sink: write after commit")
	}
	if t.c.apply != nil {
		return 0, errNotAppend
	}
	var cols []int
	for i, c := range t.p.st.Schema.Columns {
		if c.Type.Kind == cdc.KindDecimal && slices.Contains(checked, c.Name) {
			cols = append(cols, i)
		}
	}
	if len(cols) > 0 {
		skip, cerr := t.onlyChecksOf(ctx, cols)
		if cerr != nil {
			t.err = cerr
			return 0, cerr
		}
		if skip {
			restore, cerr := t.ignoreChecks(ctx)
			if cerr != nil {
				t.err = cerr
				return 0, cerr
			}
			defer func() {
				if rerr := restore(); rerr != nil && err == nil {
					t.err = rerr
					n, err = 0, rerr
				}
			}()
		}
	}
	res, err := t.q.ExecContext(ctx, insertRelationSQL(t.p.st, t.c.types, relation))
	if err == nil {
		if n, err = res.RowsAffected(); err == nil {
			t.written[cdc.OpInsert] += n
			return n, nil
		}
	}
	if ve := fitError(err); ve != nil {
		err = fmt.Errorf("sqlite sink: write %q: %w", t.p.st.Table, ve)
	} else {
		err = fmt.Errorf("sqlite sink: insert into %q: %w", t.p.st.Table, err)
	}
	t.err = err
	return 0, err
}

// Appends reports whether the plan's mode writes rows as they come
// (InsertRelation) rather than applying changes (ApplyRelation).
func (p *Plan) Appends() bool { return p.st.Merge == nil && !p.st.Mode.Keyed() }

// RelationSteps returns the statements a transaction from Attach runs to
// write relation (InsertRelation for append-like modes, ApplyRelation
// otherwise) and store the checkpoint, against the target as it is now:
// the Attach steps, the writes, the checkpoint. For `sluice plan`.
func (p *Plan) RelationSteps(ctx context.Context, relation string) ([]plan.Step, error) {
	target, exists, err := readTarget(ctx, p.sink.db, p.st.Table)
	if err != nil {
		return nil, err
	}
	out := append([]plan.Step(nil), p.attachSt...)
	if !exists {
		target = cdc.Schema{}
	}
	target = p.st.EvolvedTarget(target)
	if p.Appends() {
		if len(target.Columns) == 0 {
			target = cdc.Schema{Columns: p.st.Schema.Columns}
		}
		tt, err := checkTarget(p.st.Table, target, p.st.Schema)
		if err != nil {
			return nil, err
		}
		out = append(out, sinkStep(fmt.Sprintf("insert the rows into %s", p.st.Table), insertRelationSQL(p.st, tt, relation)))
	} else {
		a, err := CompileApply(p.st, target, relation)
		if err != nil {
			return nil, err
		}
		out = append(out, a.Steps()...)
	}
	return append(out, CheckpointStep()), nil
}
