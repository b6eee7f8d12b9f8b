// Package cdc is sluice's backend-neutral data model for change data capture:
// column types, schemas, values, change rows and stream offsets.
//
// Every source produces, and every sink consumes, these types, so a new
// backend fits without changing them.
//
// # Values
//
// A row is a []any aligned with a Schema's Columns. Each value has one Go
// representation per type, produced by Coerce:
//
//	NULL                              nil
//	TINYINT SMALLINT INT BIGINT       int64
//	BOOLEAN                           bool
//	FLOAT DOUBLE                      float64
//	DECIMAL(p,s)                      decimal.Decimal (github.com/shopspring/decimal); never float64
//	STRING VARCHAR(n) CHAR(n)         string (bytes kept exactly)
//	BINARY                            []byte
//	DATE                              time.Time at 00:00:00 UTC of that day
//	TIMESTAMP                         time.Time, in the zone it was written with
package cdc
