package postgres

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/sluicedata/sluice/cdc"
)

// A result column of a type outside the mapping of ResultType's core
// types (json, uuid, arrays, interval, inet, …) is asked for in the text
// format and kept as PostgreSQL's own text: `sluice sql` and `sluice
// preview` print what psql prints (jsonb keeps every digit, an array its
// braces and NULLs), never a Go rendering of pgx's decoded value. Types
// pgx does not know (enums, …) come as text anyway.

// coreOIDs are the types ResultType maps to a dialect type read in
// pgx's binary form.
var coreOIDs = map[uint32]bool{
	pgtype.Int2OID: true, pgtype.Int4OID: true, pgtype.Int8OID: true, pgtype.BoolOID: true,
	pgtype.Float4OID: true, pgtype.Float8OID: true, pgtype.NumericOID: true, pgtype.TextOID: true,
	pgtype.VarcharOID: true, pgtype.BPCharOID: true, pgtype.DateOID: true, pgtype.TimestamptzOID: true,
	pgtype.TimestampOID: true, pgtype.ByteaOID: true, pgtype.NameOID: true,
}

// textFormats asks for the text format of every built-in type pgx knows
// other than coreOIDs.
var textFormats = func() pgx.QueryResultFormatsByOID {
	m := pgtype.NewMap()
	out := pgx.QueryResultFormatsByOID{}
	for oid := uint32(1); oid < 16384; oid++ { // FirstNormalObjectId: built-in types are below
		if _, ok := m.TypeForOID(oid); ok && !coreOIDs[oid] {
			out[oid] = pgx.TextFormatCode
		}
	}
	return out
}()

// textType is the logical type of a result column read as text (not in
// coreOIDs): JSON, UUID, or a native type named as pgx names it.
func textType(oid uint32) cdc.Type {
	switch oid {
	case pgtype.JSONBOID:
		return cdc.TypeJSON
	case pgtype.JSONOID:
		return cdc.Type{Kind: cdc.KindJSON, Native: "json"}
	case pgtype.UUIDOID:
		return cdc.TypeUUID
	}
	if t, ok := pgtype.NewMap().TypeForOID(oid); ok {
		return cdc.NativeType(t.Name)
	}
	return cdc.TypeString
}
