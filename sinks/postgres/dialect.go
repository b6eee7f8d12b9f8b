package postgres

import "github.com/sluicedata/sluice/expr"

// Dialect is the expr dialect SQL MERGE clauses (and, in sources/postgres,
// pushed-down filters and projections) are rendered with. Its conventions
// assume the session TimeZone is UTC, which sources/postgres sets on every
// connection it opens.
var Dialect = expr.Postgres
