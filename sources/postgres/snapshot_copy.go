package postgres

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

var _ runner.CopySnapshot = (*snapshot)(nil)

// CopyFormat is the text format of a PostgreSQL pass-through backfill:
// COPY's text format, values in their types' output functions under
// copySettings.
const CopyFormat = "postgres"

// copySettings fix the text form of values a chunk's COPY writes (and the
// sink's COPY reads, sinks/postgres): ISO dates whatever the session's
// DateStyle, PostgreSQL-style intervals, floats that read back exactly,
// bytea in hex. They last until the snapshot's transaction ends.
const copySettings = `SELECT set_config('datestyle', 'ISO, YMD', true), set_config('intervalstyle', 'postgres', true),
	set_config('extra_float_digits', '3', true), set_config('bytea_output', 'hex', true)`

// PrepareCopy implements runner.CopySnapshot: the chunk query of a
// pass-through backfill, the plan's filter and projection rendered with
// expr's PostgreSQL dialect over the table's rows as INSERT changes (the
// metadata columns are constants: 'INSERT', the snapshot's version and
// commit time):
//
//	COPY (SELECT <projection> FROM (SELECT 'INSERT'::text AS "__change_type", …, <columns> FROM "t"
//	      WHERE (k) > (<after>) AND (k) <= (<up to>)) c WHERE <filter> ORDER BY c."k") TO STDOUT
//
// The output columns' types are the statement's (a prepared
// description), as format_type names them. An expression that does not
// render is refused with runner.ErrNoPassThrough. It runs under a
// savepoint: a failure leaves the snapshot usable.
func (s *snapshot) PrepareCopy(ctx context.Context, p *plan.Plan) (runner.CopyChunks, error) {
	src := p.Source.Schema
	col := func(_, idx int) string { return "c." + sinkpg.Quote(src.Columns[idx].Name) }
	proj := make([]string, len(p.Project))
	for i, it := range p.Project {
		if it.Expr == nil {
			return nil, fmt.Errorf("%w: projection %q is not bound", runner.ErrNoPassThrough, it.Name)
		}
		x, err := it.Expr.SQL(sinkpg.Dialect, col)
		if err != nil {
			return nil, fmt.Errorf("%w: projection %q: %v", runner.ErrNoPassThrough, it.Name, err)
		}
		proj[i] = x + " AS " + sinkpg.Quote(it.Name)
	}
	where := ""
	if p.Filter != nil && p.Filter.Expr != nil {
		f, err := p.Filter.Expr.SQL(sinkpg.Dialect, col)
		if err != nil {
			return nil, fmt.Errorf("%w: filter: %v", runner.ErrNoPassThrough, err)
		}
		where = " WHERE " + f
	}
	cols := s.t.Table.Columns
	inner := make([]string, 0, 3+len(cols))
	inner = append(inner,
		"'INSERT'::text AS "+sinkpg.Quote(cdc.ColChangeType),
		fmt.Sprintf("%d::bigint AS %s", s.to.Batch<<32, sinkpg.Quote(cdc.ColCommitVersion)),
		fmt.Sprintf("'%s'::timestamptz AS %s", s.at.Format(time.RFC3339Nano), sinkpg.Quote(cdc.ColCommitTimestamp)))
	for _, c := range cols {
		inner = append(inner, sinkpg.Quote(c.Name))
	}
	order := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		order[i] = "c." + sinkpg.Quote(cols[k].Name)
	}
	cc := &copyChunks{s: s,
		head:  "SELECT " + strings.Join(proj, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + sinkpg.Quote(s.t.Table.Name),
		tail:  ") c" + where + " ORDER BY " + strings.Join(order, ", "),
		bound: "SELECT " + s.keySelect() + " FROM " + sinkpg.Quote(s.t.Table.Name),
	}
	err := s.savepoint(ctx, func() error {
		if _, err := s.tx.Exec(ctx, copySettings); err != nil {
			return err
		}
		sd, err := s.tx.Conn().PgConn().Prepare(ctx, "", cc.head+cc.tail, nil)
		if err != nil {
			return err
		}
		oids, mods := make([]uint32, len(sd.Fields)), make([]int32, len(sd.Fields))
		for i, f := range sd.Fields {
			oids[i], mods[i] = f.DataTypeOID, f.TypeModifier
		}
		rows, err := s.tx.Query(ctx, `SELECT format_type(o, m) FROM unnest($1::oid[], $2::int[]) WITH ORDINALITY u(o, m, n) ORDER BY n`, oids, mods)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				return err
			}
			cc.types = append(cc.types, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", runner.ErrNoPassThrough, s.b.wrap(err, "compile the backfill's COPY of %s", sinkpg.Quote(s.info.Table)))
	}
	return cc, nil
}

// keySelect lists the key columns as Chunk reads them.
func (s *snapshot) keySelect() string {
	sel := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		sel[i] = s.t.Table.Columns[k].Select("")
	}
	return strings.Join(sel, ", ")
}

// savepoint runs f under a savepoint of the snapshot's transaction, so
// that its failure does not abort the snapshot.
func (s *snapshot) savepoint(ctx context.Context, f func() error) error {
	if _, err := s.tx.Exec(ctx, "SAVEPOINT sluice_copy"); err != nil {
		return err
	}
	if err := f(); err != nil {
		if _, rerr := s.tx.Exec(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT sluice_copy"); rerr != nil {
			return fmt.Errorf("%w (and the snapshot failed: %v)", err, rerr)
		}
		return err
	}
	_, err := s.tx.Exec(ctx, "RELEASE SAVEPOINT sluice_copy")
	return err
}

// copyChunks is the runner.CopyChunks of a snapshot.
type copyChunks struct {
	s          *snapshot
	head, tail string // the chunk SELECT before and after its key range
	bound      string // SELECT of the key columns
	types      []string
}

func (cc *copyChunks) Format() string  { return CopyFormat }
func (cc *copyChunks) Types() []string { return cc.types }

func (cc *copyChunks) Steps() []plan.Step {
	return []plan.Step{
		{Where: "source", What: "fix the text form of values (per transaction)", SQL: copySettings},
		{Where: "source", What: "find the key that ends the chunk: the n-th after the last chunk's (index order)",
			SQL: cc.bound + " WHERE (" + cc.s.keyList + ") > (" + cc.s.params + ") ORDER BY " + cc.s.keyList + " OFFSET <chunk - 1> LIMIT 1"},
		{Where: "source", What: "write the chunk's rows, filtered and projected, as COPY text (under a savepoint: a failure leaves the snapshot usable)",
			SQL: "COPY (" + cc.head + " WHERE (" + cc.s.keyList + ") > (<last key>) AND (" + cc.s.keyList + ") <= (<chunk's end key>)" + cc.tail + ") TO STDOUT"},
	}
}

// Bound implements runner.CopyChunks.
func (cc *copyChunks) Bound(ctx context.Context, after []any, n int) ([]any, int64, bool, error) {
	s := cc.s
	if n <= 0 {
		return nil, 0, false, fmt.Errorf("chunk size %d: want at least 1", n)
	}
	cond, args := "", []any(nil)
	if after != nil {
		var err error
		if args, err = s.keyArgs(after); err != nil {
			return nil, 0, false, fmt.Errorf("read %s after key %v: %w", sinkpg.Quote(s.info.Table), after, err)
		}
		cond = " WHERE (" + s.keyList + ") > (" + s.params + ")"
	}
	rows, err := s.tx.Query(ctx, fmt.Sprintf("%s%s ORDER BY %s OFFSET %d LIMIT 1", cc.bound, cond, s.keyList, n-1), args...)
	if err != nil {
		return nil, 0, false, s.b.wrap(err, "find the end of the chunk of %s after key %v", sinkpg.Quote(s.info.Table), after)
	}
	var key []any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return nil, 0, false, s.b.wrap(err, "find the end of the chunk of %s after key %v", sinkpg.Quote(s.info.Table), after)
		}
		key = make([]any, len(s.keyIdx))
		for i, k := range s.keyIdx {
			c := s.t.Table.Columns[k]
			if key[i], err = sinkpg.Decode(vals[i], c.Type); err != nil {
				rows.Close()
				return nil, 0, false, fmt.Errorf("read %s: key column %s: %w", sinkpg.Quote(s.info.Table), c.Name, err)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, false, s.b.wrap(err, "find the end of the chunk of %s after key %v", sinkpg.Quote(s.info.Table), after)
	}
	if key != nil {
		return key, int64(n), true, nil
	}
	var left int64
	if err := s.tx.QueryRow(ctx, "SELECT count(*) FROM "+sinkpg.Quote(s.t.Table.Name)+cond, args...).Scan(&left); err != nil {
		return nil, 0, false, s.b.wrap(err, "count the rows of %s after key %v", sinkpg.Quote(s.info.Table), after)
	}
	return nil, left, false, nil
}

// literals renders a key as SQL literals of the key columns' types (COPY
// takes no parameters), their text as the database prints it.
func (cc *copyChunks) literals(ctx context.Context, key []any) (string, error) {
	s := cc.s
	args, err := s.keyArgs(key)
	if err != nil {
		return "", err
	}
	sel := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		c := s.t.Table.Columns[k]
		sel[i] = fmt.Sprintf("($%d::%s)::text", i+1, c.PGType)
		if !c.Native {
			sel[i] = fmt.Sprintf("($%d::text::%s)::text", i+1, c.PGType)
		}
	}
	texts := make([]string, len(sel))
	dest := make([]any, len(sel))
	for i := range texts {
		dest[i] = &texts[i]
	}
	if err := s.tx.QueryRow(ctx, "SELECT "+strings.Join(sel, ", "), args...).Scan(dest...); err != nil {
		return "", s.b.wrap(err, "key %v", key)
	}
	for i, k := range s.keyIdx {
		texts[i] = QuoteLiteral(texts[i]) + "::" + s.t.Table.Columns[k].PGType
	}
	return strings.Join(texts, ", "), nil
}

// QuoteLiteral quotes s as a PostgreSQL string literal (an E” string, so
// that it reads the same whatever standard_conforming_strings is).
func QuoteLiteral(s string) string {
	return "E'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// Copy implements runner.CopyChunks.
func (cc *copyChunks) Copy(ctx context.Context, w io.Writer, after, upTo []any) error {
	s := cc.s
	var conds []string
	for _, b := range []struct {
		key []any
		op  string
	}{{after, ">"}, {upTo, "<="}} {
		if b.key == nil {
			continue
		}
		lit, err := cc.literals(ctx, b.key)
		if err != nil {
			return fmt.Errorf("copy %s: %w", sinkpg.Quote(s.info.Table), err)
		}
		conds = append(conds, "("+s.keyList+") "+b.op+" ("+lit+")")
	}
	q := cc.head
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	q = "COPY (" + q + cc.tail + ") TO STDOUT"
	err := s.savepoint(ctx, func() error {
		_, err := s.tx.Conn().PgConn().CopyTo(ctx, w, q)
		return err
	})
	if err != nil {
		return s.b.wrap(err, "copy %s after key %v", sinkpg.Quote(s.info.Table), after)
	}
	return nil
}
