package expr

import (
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
)

// Postgres is the PostgreSQL dialect. Types map to native ones (PGType).
// Semantics follow Eval:
//   - integer arithmetic is done in bigint (operands are cast), so INT
//     columns do not overflow at 2^31; BIGINT overflow is an error in both;
//   - / and % wrap the divisor in NULLIF(…, 0): division by zero is NULL;
//     integer / integer is double precision (3 / 2 = 1.5), as in Eval;
//   - DECIMAL results are CAST to numeric(p,s) of the result type (rounding
//     half away from zero, overflow an error); DECIMAL division is exact:
//     round(div(a·10^(s+1), b)·10^-(s+1), s);
//   - text comparisons use COLLATE "C" (bytewise, as Eval and SQLite);
//   - CONCAT and || are rendered with || (NULL if any argument is NULL,
//     unlike PostgreSQL's concat());
//   - CAST to an integer truncates toward zero (trunc), as Eval.
//
// Known differences: PostgreSQL does not keep a timestamp's zone, so
// CAST(timestamp AS STRING / DATE) and text without a zone read as a
// TIMESTAMP use the session TimeZone where Eval uses the value's own zone
// (UTC for text without zone) — run with TimeZone = 'UTC'; VARCHAR(n) and
// CHAR(n) casts map to text (lengths are not enforced, as in Eval).
var Postgres Dialect = pgDialect{}

type pgDialect struct{}

func (pgDialect) Name() string { return "postgres" }

// PGType returns the PostgreSQL type of a dialect type: INT integer, BIGINT
// bigint, SMALLINT and TINYINT smallint, BOOLEAN boolean, FLOAT real,
// DOUBLE double precision, DECIMAL(p,s) numeric(p,s), STRING/VARCHAR/CHAR
// text, DATE date, TIMESTAMP timestamptz, BINARY bytea, JSON jsonb, UUID
// uuid; a type with a Native name (cdc.Type) is that type, a DECIMAL
// without precision numeric.
func PGType(t cdc.Type) string {
	if t.Native != "" {
		return t.Native
	}
	switch t.Kind {
	case cdc.KindJSON:
		return "jsonb"
	case cdc.KindUUID:
		return "uuid"
	case cdc.KindTinyInt, cdc.KindSmallInt:
		return "smallint"
	case cdc.KindInt:
		return "integer"
	case cdc.KindBigInt:
		return "bigint"
	case cdc.KindBoolean:
		return "boolean"
	case cdc.KindFloat:
		return "real"
	case cdc.KindDouble:
		return "double precision"
	case cdc.KindDecimal:
		if t.Precision == 0 {
			return "numeric"
		}
		return fmt.Sprintf("numeric(%d,%d)", t.Precision, t.Scale)
	case cdc.KindDate:
		return "date"
	case cdc.KindTimestamp:
		return "timestamptz"
	case cdc.KindBinary:
		return "bytea"
	}
	return "text"
}

func (pgDialect) literal(n *node) string {
	switch v := n.val.(type) {
	case nil:
		return "NULL"
	case int64:
		if v < 0 {
			return fmt.Sprintf("(%d)", v)
		}
		return fmt.Sprint(v)
	case float64:
		return "CAST(" + QuoteString(formatFloatSQL(v)) + " AS double precision)"
	case string:
		return QuoteString(v)
	case bool:
		if v {
			return "TRUE"
		}
		return "FALSE"
	case []byte:
		return "'\\x" + strings.TrimSuffix(strings.TrimPrefix(hexLiteral(v), "X'"), "'") + "'::bytea"
	}
	s := storageText(n.val, n.typ)
	switch n.typ.Kind {
	case cdc.KindDecimal:
		if strings.HasPrefix(s, "-") {
			return "(" + s + ")"
		}
		return s
	case cdc.KindDate:
		return "DATE " + QuoteString(s)
	case cdc.KindTimestamp:
		return "TIMESTAMPTZ " + QuoteString(s)
	}
	return QuoteString(s)
}

func pgBigint(n *node, s string) string {
	if n.typ.Kind == cdc.KindBigInt && n.op != opLit {
		return s
	}
	return "CAST(" + s + " AS bigint)"
}

func (d pgDialect) render(r *renderer, n *node) (string, error) {
	if n.op == opLit {
		return d.literal(n), nil
	}
	if n.op == opCol {
		return r.col(n.rel, n.col), nil
	}
	a, err := r.all(n.args)
	if err != nil {
		return "", err
	}
	switch n.op {
	case opNeg:
		if isInteger(n.typ) {
			return "(- " + pgBigint(n.args[0], a[0]) + ")", nil
		}
		return "(- " + a[0] + ")", nil
	case opArith:
		return d.arith(n, a), nil
	case opConcat:
		return "(" + strings.Join(a, " || ") + ")", nil
	case opCmp:
		return d.cmp(n.sub, n.args[0], n.args[1], a[0], a[1]), nil
	case opAnd:
		return "(" + a[0] + " AND " + a[1] + ")", nil
	case opOr:
		return "(" + a[0] + " OR " + a[1] + ")", nil
	case opNot:
		return "(NOT " + a[0] + ")", nil
	case opIs:
		return isSQL(n, a[0]), nil
	case opIn:
		parts := make([]string, 0, len(a)-1)
		for i := 1; i < len(a); i++ {
			parts = append(parts, d.cmp("=", n.args[0], n.args[i], a[0], a[i]))
		}
		s := "(" + strings.Join(parts, " OR ") + ")"
		if !n.args[0].typ.Kind.IsText() && !anyTemporal(n) {
			s = "(" + a[0] + " IN (" + strings.Join(a[1:], ", ") + "))"
		}
		if n.not {
			return "(NOT " + s + ")", nil
		}
		return s, nil
	case opBetween:
		s := "(" + d.cmp(">=", n.args[0], n.args[1], a[0], a[1]) + " AND " + d.cmp("<=", n.args[0], n.args[2], a[0], a[2]) + ")"
		if n.not {
			return "(NOT " + s + ")", nil
		}
		return s, nil
	case opLike:
		esc := QuoteString(`\`)
		if len(a) == 3 {
			esc = a[2]
		}
		not := ""
		if n.not {
			not = "NOT "
		}
		return fmt.Sprintf("(%s %sLIKE %s ESCAPE %s)", a[0], not, a[1], esc), nil
	case opCase:
		return caseSQL(n, a), nil
	case opCast:
		return d.cast(n.args[0].typ, n.typ, a[0]), nil
	case opFunc:
		return d.function(r, n, a)
	}
	return "", r.b.expr.errAt(n.off, ErrUnsupported, "cannot render this expression for PostgreSQL")
}

func anyTemporal(n *node) bool {
	for _, a := range n.args {
		if a.typ.Kind == cdc.KindDate || a.typ.Kind == cdc.KindTimestamp {
			return true
		}
	}
	return false
}

func (pgDialect) arith(n *node, a []string) string {
	x, y := n.args[0], n.args[1]
	switch {
	case n.typ.Kind == cdc.KindDecimal:
		var s string
		switch n.sub {
		case "/":
			k := n.typ.Scale + 1
			s = fmt.Sprintf("round(div((%s) * 1%s, NULLIF(%s, 0)) * 0.%s1, %d)", a[0], strings.Repeat("0", k), a[1], strings.Repeat("0", k-1), n.typ.Scale)
		case "%":
			s = fmt.Sprintf("(%s %% NULLIF(%s, 0))", a[0], a[1])
		default:
			s = "(" + a[0] + " " + n.sub + " " + a[1] + ")"
		}
		return "CAST(" + s + " AS " + PGType(n.typ) + ")"
	case isFloat(n.typ):
		if n.sub == "/" {
			return "(" + a[0] + " / NULLIF(" + a[1] + ", 0))"
		}
		return "(" + a[0] + " " + n.sub + " " + a[1] + ")"
	case n.sub == "%":
		return "(" + pgBigint(x, a[0]) + " % NULLIF(" + pgBigint(y, a[1]) + ", 0))"
	}
	return "(" + pgBigint(x, a[0]) + " " + n.sub + " " + pgBigint(y, a[1]) + ")"
}

func (pgDialect) cmp(sub string, x, y *node, a, b string) string {
	switch {
	case (x.typ.Kind.IsText() || y.typ.Kind.IsText()) && !isNullType(x.typ) && !isNullType(y.typ):
		return "(" + a + " " + sub + " " + b + ` COLLATE "C")`
	case x.typ.Kind == cdc.KindDate && y.typ.Kind == cdc.KindTimestamp:
		a = "(CAST(" + a + " AS timestamp) AT TIME ZONE 'UTC')"
	case y.typ.Kind == cdc.KindDate && x.typ.Kind == cdc.KindTimestamp:
		b = "(CAST(" + b + " AS timestamp) AT TIME ZONE 'UTC')"
	}
	return "(" + a + " " + sub + " " + b + ")"
}

func (pgDialect) cast(from, to cdc.Type, a string) string {
	switch {
	case isNullType(from):
		return "CAST(NULL AS " + PGType(to) + ")"
	case from == to, from.Kind.IsPlainText() && to.Kind.IsPlainText():
		return a
	case to.Kind == cdc.KindJSON && (from.Kind.IsNumeric() || from.Kind == cdc.KindBoolean):
		// A number or boolean is its JSON text, as the Go evaluation makes it.
		return "CAST(to_jsonb(" + a + ") AS " + PGType(to) + ")"
	case to.Kind.IsText() && !to.Kind.IsPlainText():
		// Into JSON, UUID or a native type: PostgreSQL parses the text.
		return "CAST(" + pgDialect{}.cast(from, cdc.TypeString, a) + " AS " + PGType(to) + ")"
	case to.Kind.IsInteger():
		switch {
		case from.Kind == cdc.KindDecimal || isFloat(from):
			return "CAST(trunc(" + a + ") AS " + PGType(to) + ")"
		case from.Kind.IsText():
			return "CAST(trunc(CAST(" + a + " AS numeric)) AS " + PGType(to) + ")"
		}
	case to.Kind.IsText():
		switch {
		case from.Kind == cdc.KindDecimal:
			return "CAST(CAST(" + a + " AS " + PGType(from) + ") AS text)"
		case from.Kind == cdc.KindBinary:
			return "convert_from(" + a + ", 'UTF8')"
		}
	case to.Kind == cdc.KindBoolean && (from.Kind == cdc.KindDecimal || isFloat(from)):
		return "(" + a + " <> 0)"
	case to.Kind == cdc.KindTimestamp && from.Kind == cdc.KindDate:
		return "(CAST(" + a + " AS timestamp) AT TIME ZONE 'UTC')"
	case to.Kind == cdc.KindBinary && from.Kind.IsText():
		return "convert_to(" + a + ", 'UTF8')"
	}
	return "CAST(" + a + " AS " + PGType(to) + ")"
}

func (d pgDialect) function(r *renderer, n *node, a []string) (string, error) {
	switch n.sub {
	case "coalesce":
		return "COALESCE(" + strings.Join(a, ", ") + ")", nil
	case "nullif":
		return fmt.Sprintf("CASE WHEN %s THEN NULL ELSE %s END", d.cmp("=", n.args[0], n.args[1], a[0], a[1]), a[0]), nil
	case "upper", "lower", "trim", "ltrim", "rtrim", "replace":
		return n.sub + "(" + strings.Join(a, ", ") + ")", nil
	case "length":
		if n.args[0].typ.Kind == cdc.KindBinary {
			return "CAST(length(" + a[0] + ") AS bigint)", nil
		}
		return "CAST(char_length(" + a[0] + ") AS bigint)", nil
	case "substring":
		start := fmt.Sprintf("CASE WHEN %[2]s > 0 THEN %[2]s WHEN %[2]s < 0 THEN char_length(%[1]s) + %[2]s + 1 ELSE 1 END", a[0], a[1])
		if len(a) == 3 {
			return fmt.Sprintf("substr(%s, %s, GREATEST(%s, 0))", a[0], start, a[2]), nil
		}
		return fmt.Sprintf("substr(%s, %s)", a[0], start), nil
	case "abs":
		if isInteger(n.typ) {
			return "abs(" + pgBigint(n.args[0], a[0]) + ")", nil
		}
		if n.typ.Kind == cdc.KindDecimal {
			return "CAST(abs(" + a[0] + ") AS " + PGType(n.typ) + ")", nil
		}
		return "abs(" + a[0] + ")", nil
	case "round":
		switch {
		case n.typ.Kind == cdc.KindDecimal:
			return "CAST(round(" + a[0] + ", " + a[1] + ") AS " + PGType(n.typ) + ")", nil
		case isInteger(n.typ):
			return "CAST(round(CAST(" + a[0] + " AS numeric), " + a[1] + ") AS bigint)", nil
		}
		return "CAST(round(CAST(" + a[0] + " AS numeric), " + a[1] + ") AS double precision)", nil
	}
	return "", r.b.expr.errAt(n.off, ErrUnsupported, "cannot render %s() for PostgreSQL", n.sub)
}
