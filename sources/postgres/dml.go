package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// translateDML renders a parsed INSERT/UPDATE/DELETE/SELECT as PostgreSQL
// SQL (identifiers double-quoted, literals as written).
func translateDML(st *dsl.DML) (string, error) {
	return expr.TranslateDML(st.AST, expr.Postgres)
}

// execDML runs INSERT, UPDATE and DELETE (nil result) and SELECT (a
// ResultSet with canonical values).
func (b *Backend) execDML(ctx context.Context, st *dsl.DML) (*runner.ResultSet, error) {
	q, err := translateDML(st)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(st.Kind, "SELECT") {
		tag, err := b.pool.Exec(ctx, q)
		if err != nil {
			return nil, b.wrap(err, "%s", st.Kind)
		}
		return &runner.ResultSet{Affected: tag.RowsAffected()}, nil
	}
	// A SELECT that names table streams reads their pending changes
	// (streamselect.go).
	if rs, ok, err := b.selectStreams(ctx, st, q); ok || err != nil {
		return rs, err
	}
	return b.Query(ctx, q)
}

// Query runs a SELECT and materializes its rows: each column's logical type
// comes from its PostgreSQL type (ResultType), each value is decoded to its
// canonical form (sinkpg.Decode: numeric → decimal.Decimal exactly,
// timestamptz → time.Time in UTC, …). The statement is described each
// time, not cached (pgx.QueryExecModeDescribeExec), so that the same text
// returns the new columns after DDL.
func (b *Backend) Query(ctx context.Context, q string, args ...any) (*runner.ResultSet, error) {
	return b.queryOn(ctx, b.pool, q, args...)
}

// queryOn is Query on db (the pool, a connection or a transaction).
func (b *Backend) queryOn(ctx context.Context, db sinkpg.Querier, q string, args ...any) (*runner.ResultSet, error) {
	// Described, not cached: a statement a person types runs once, and a
	// cached one fails after DDL changes its result columns ("cached plan
	// must not change result type", SQLSTATE 0A000) when the same text
	// runs again on the pool (sluice sql, serve).
	rows, err := db.Query(ctx, q, append([]any{pgx.QueryExecModeDescribeExec, textFormats}, args...)...)
	if err != nil {
		return nil, b.wrap(err, "SELECT")
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	rs := &runner.ResultSet{Columns: make([]cdc.Column, len(fds)), Rows: [][]any{}}
	for i, fd := range fds {
		rs.Columns[i] = cdc.Column{Name: fd.Name, Type: ResultType(fd.DataTypeOID, fd.TypeModifier)}
	}
	tm := rows.Conn().TypeMap()
	for rows.Next() {
		raw := rows.RawValues()
		vals := make([]any, len(fds))
		for i, fd := range fds {
			if raw[i] == nil {
				continue
			}
			if fd.Format == pgx.TextFormatCode && !coreOIDs[fd.DataTypeOID] {
				// PostgreSQL's own text (see textFormats), not decoded:
				// pgx's json decoding fails on a number Go's float64
				// cannot hold (1e400), which json keeps.
				vals[i] = string(raw[i])
				continue
			}
			var v any = string(raw[i])
			if dt, ok := tm.TypeForOID(fd.DataTypeOID); ok {
				var err error
				if v, err = dt.Codec.DecodeValue(tm, fd.DataTypeOID, fd.Format, raw[i]); err != nil {
					return nil, b.wrap(err, "SELECT: column %s", fd.Name)
				}
			}
			d, err := sinkpg.Decode(v, rs.Columns[i].Type)
			if err != nil {
				d = fmt.Sprint(v) // a type outside the mapping: its text
			}
			vals[i] = d
		}
		rs.Rows = append(rs.Rows, vals)
	}
	return rs, b.wrap(rows.Err(), "SELECT")
}

// ResultType maps a result column's type OID and modifier to a logical
// type; types outside the mapping are STRING.
func ResultType(oid uint32, typmod int32) cdc.Type {
	switch oid {
	case pgtype.Int2OID:
		return cdc.Type{Kind: cdc.KindSmallInt}
	case pgtype.Int4OID:
		return cdc.TypeInt
	case pgtype.Int8OID:
		return cdc.TypeBigInt
	case pgtype.BoolOID:
		return cdc.TypeBoolean
	case pgtype.Float4OID:
		return cdc.Type{Kind: cdc.KindFloat}
	case pgtype.Float8OID:
		return cdc.TypeDouble
	case pgtype.NumericOID:
		if typmod < 4 {
			return cdc.TypeNumeric
		}
		return cdc.Decimal(int((typmod-4)>>16)&0xffff, int(typmod-4)&0xffff)
	case pgtype.VarcharOID:
		if typmod > 4 {
			return cdc.Type{Kind: cdc.KindVarchar, Length: int(typmod - 4)}
		}
		return cdc.TypeString
	case pgtype.BPCharOID:
		if typmod > 4 {
			return cdc.Type{Kind: cdc.KindChar, Length: int(typmod - 4)}
		}
		return cdc.TypeString
	case pgtype.DateOID:
		return cdc.TypeDate
	case pgtype.TimestamptzOID:
		return cdc.TypeTimestamp
	case pgtype.TimestampOID:
		return cdc.Type{Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}
	case pgtype.ByteaOID:
		return cdc.TypeBinary
	case pgtype.TextOID, pgtype.NameOID:
		return cdc.TypeString
	}
	return textType(oid)
}
