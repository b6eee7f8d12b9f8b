package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// translateDML renders a parsed INSERT/UPDATE/DELETE/SELECT as SQLite SQL
// (identifiers double-quoted, fractional literals as text so DECIMAL_TEXT
// columns store them exactly): expr.TranslateDML.
func translateDML(st *dsl.DML) (string, error) {
	q, err := expr.TranslateDML(st.AST, expr.SQLite)
	if err != nil {
		return "", fmt.Errorf("%s: %w", st.Kind, err)
	}
	return q, nil
}

// execDML runs INSERT, UPDATE and DELETE (nil result) and SELECT (a
// ResultSet). Result columns that are table columns get the table's logical
// type (from their declared type) and decoded canonical values; computed
// columns get the type of their first non-NULL value (BIGINT, DOUBLE,
// STRING or BINARY).
func (b *Backend) execDML(ctx context.Context, st *dsl.DML) (*runner.ResultSet, error) {
	q, err := translateDML(st)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(st.Kind, "SELECT") {
		res, err := b.db.ExecContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.Kind, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, nil // the count is unknown; the statement succeeded
		}
		return &runner.ResultSet{Affected: n}, nil
	}
	// A SELECT that names table streams reads their pending changes
	// (streamselect.go).
	if rs, ok, err := b.selectStreams(ctx, st, q); ok || err != nil {
		return rs, err
	}
	return b.query(ctx, q)
}

// query runs a SELECT and materializes its rows with logical types.
func (b *Backend) query(ctx context.Context, q string, args ...any) (*runner.ResultSet, error) {
	return queryOn(ctx, b.db, q, args...)
}

// queryOn is query on db (a database, connection or transaction).
func queryOn(ctx context.Context, db sqlitex.Querier, q string, args ...any) (*runner.ResultSet, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("SELECT: %w", err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("SELECT: %w", err)
	}
	rs := &runner.ResultSet{Columns: make([]cdc.Column, len(cts)), Rows: [][]any{}}
	declared := make([]bool, len(cts))
	for i, ct := range cts {
		rs.Columns[i].Name = ct.Name()
		if d := ct.DatabaseTypeName(); d != "" {
			declared[i] = true
			rs.Columns[i].Type = sqlitex.LogicalType(d)
		}
	}
	for rows.Next() {
		vals := make([]any, len(cts))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("SELECT: %w", err)
		}
		rs.Rows = append(rs.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("SELECT: %w", err)
	}
	for i := range rs.Columns {
		if !declared[i] {
			rs.Columns[i].Type = inferType(rs.Rows, i)
		}
	}
	for _, r := range rs.Rows {
		if err := sqlitex.DecodeRow(r, rs.Columns); err != nil {
			return nil, fmt.Errorf("SELECT: %w", err)
		}
	}
	return rs, nil
}

func inferType(rows [][]any, i int) cdc.Type {
	for _, r := range rows {
		switch r[i].(type) {
		case int64:
			return cdc.TypeBigInt
		case float64:
			return cdc.TypeDouble
		case []byte:
			return cdc.TypeBinary
		case string:
			return cdc.TypeString
		}
	}
	return cdc.TypeString
}
