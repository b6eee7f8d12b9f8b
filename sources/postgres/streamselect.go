package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// A SELECT of `sluice sql` may read table streams by name, as on
// ClickZetta (SELECT * FROM orders_stream WHERE __change_type = 'INSERT'):
// a stream then reads as the relation of its pending changes — exactly
// what a read from its offset (and `sluice preview`) returns now: the
// columns of ChangesQuery, "__change_type" text, "__commit_version"
// bigint, "__commit_timestamp" timestamptz, then the table's columns with
// their types (numeric(p,s) stays DECIMAL(p,s)).
//
// selectStreams runs such a SELECT in one REPEATABLE READ, READ ONLY
// transaction (a read-only transaction refuses even CREATE TEMP VIEW):
// it fixes each stream's read point as Changes does and prefixes the
// translated SELECT with one CTE per stream name as written, WITH "name"
// AS (ChangesQuery(offset, read point)) — ChangesQuery has no parameters,
// and a CTE shadows relations of the same name in the whole statement,
// subqueries and UNION branches included. The transaction is rolled back;
// nothing is written, so the offset never moves.
//
// Stream names match the names the SELECT writes exactly, else
// case-insensitively when that picks one stream. A relation that the name
// (as quoted by the translation) resolves to keeps being what it reads:
// a table named like a stream shadows the stream.
func (b *Backend) selectStreams(ctx context.Context, st *dsl.DML, q string) (rs *runner.ResultSet, ok bool, err error) {
	refs := st.TableRefs()
	if len(refs) == 0 {
		return nil, false, nil
	}
	list, err := b.ListStreams(ctx)
	if err != nil || len(list) == 0 {
		return nil, false, err
	}
	type use struct{ ref, stream string }
	var uses []use
	for _, r := range refs {
		name, err := matchStream(list, r)
		if err != nil {
			return nil, true, fmt.Errorf("SELECT: %w", err)
		}
		if name == "" {
			continue
		}
		var exists bool
		if err := b.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, sinkpg.Quote(r)).Scan(&exists); err != nil {
			return nil, true, b.wrap(err, "SELECT")
		}
		if !exists {
			uses = append(uses, use{r, name})
		}
	}
	if len(uses) == 0 {
		return nil, false, nil
	}

	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, true, b.wrap(err, "SELECT")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The first statement fixes the snapshot every stream is read in.
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		return nil, true, b.wrap(err, "SELECT")
	}
	reads := map[string]string{} // stream → its ChangesQuery
	ctes := make([]string, len(uses))
	for i, u := range uses {
		cq, done := reads[u.stream]
		if !done {
			s, _, err := b.describeStream(ctx, tx, u.stream)
			if err != nil {
				return nil, true, fmt.Errorf("SELECT: %w", err)
			}
			t, fp, to, err := b.readPoint(ctx, tx, s, s.Offset)
			if err != nil {
				return nil, true, fmt.Errorf("SELECT: %w", err)
			}
			// The table's columns in their own types (json stays json).
			cq = changesQuery(t, s, fp, to, queryOptions{ordered: true, base: literalBase(to), native: true})
			reads[u.stream] = cq
		}
		ctes[i] = sinkpg.Quote(u.ref) + " AS (" + cq + ")"
	}
	rs, err = b.queryOn(ctx, tx, "WITH "+strings.Join(ctes, ",\n")+"\n"+q)
	return rs, true, err
}

// matchStream returns the stream of list named ref, else the only one
// named ref case-insensitively; "" when there is none.
func matchStream(list []*runner.StreamInfo, ref string) (string, error) {
	var folded []string
	for _, s := range list {
		if s.Name == ref {
			return s.Name, nil
		}
		if strings.EqualFold(s.Name, ref) {
			folded = append(folded, s.Name)
		}
	}
	switch len(folded) {
	case 0:
		return "", nil
	case 1:
		return folded[0], nil
	}
	return "", fmt.Errorf("table stream name %s is ambiguous: %s (write it with the exact case)", ref, strings.Join(folded, ", "))
}
