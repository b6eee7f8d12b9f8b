package expr

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

// Type rules (after Spark SQL / ClickZetta, which follow Hive):
//
//   - integer op integer → BIGINT for + - * %; / → DOUBLE (3 / 2 = 1.5).
//   - any FLOAT/DOUBLE operand → DOUBLE.
//   - DECIMAL with an integer: the integer counts as DECIMAL(3,0) TINYINT,
//     (5,0) SMALLINT, (10,0) INT, (20,0) BIGINT, or its own digits for a
//     literal.
//   - DECIMAL(p1,s1) op DECIMAL(p2,s2):
//     + -  s = max(s1,s2), p = max(p1-s1, p2-s2) + s + 1
//     *    s = s1+s2,      p = p1+p2+1
//     /    s = max(6, s1+p2+1), p = p1-s1+s2+s
//     %    s = max(s1,s2), p = min(p1-s1, p2-s2) + s
//     then, when p > 38: the integer digits p-s are kept and the scale is
//     reduced to max(38-(p-s), min(s, 6)), p = 38 (Spark's
//     DecimalType.adjustPrecisionScale).
//   - results are rounded half away from zero to the result scale; a result
//     with more integer digits than p-s is an evaluation error.

const maxPrec = cdc.MaxDecimalPrecision

// decimalLiteral types a numeric literal written with digits and an
// optional point: 1000.00 → DECIMAL(6,2), 0.5 → DECIMAL(1,1).
func decimalLiteral(s string) (decimal.Decimal, cdc.Type, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return d, cdc.Type{}, fmt.Errorf("bad number %s", s)
	}
	digits := strings.TrimLeft(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, _ := strings.Cut(digits, ".")
	intPart = strings.TrimLeft(intPart, "0")
	sc := len(frac)
	p := len(intPart) + sc
	if p == 0 {
		p = 1
	}
	if p < sc {
		p = sc
	}
	if p > maxPrec {
		return d, cdc.Type{}, fmt.Errorf("number %s has more than %d digits", s, maxPrec)
	}
	return d, cdc.Decimal(p, sc), nil
}

// asDecimalType returns the DECIMAL type an exact numeric operand counts as.
func asDecimalType(n *node) cdc.Type {
	t := n.typ
	switch t.Kind {
	case cdc.KindDecimal:
		if t.Precision == 0 {
			// numeric without precision: computed as DECIMAL(38,10).
			return cdc.Decimal(maxPrec, 10)
		}
		return t
	case cdc.KindTinyInt:
		return cdc.Decimal(3, 0)
	case cdc.KindSmallInt:
		return cdc.Decimal(5, 0)
	case cdc.KindInt:
		return cdc.Decimal(10, 0)
	}
	if n.op == opLit {
		if v, ok := n.val.(int64); ok {
			p := len(strings.TrimPrefix(fmt.Sprint(v), "-"))
			return cdc.Decimal(p, 0)
		}
	}
	return cdc.Decimal(20, 0)
}

func adjust(p, s int) cdc.Type {
	if p <= maxPrec {
		return cdc.Decimal(max(p, 1), s)
	}
	intDigits := p - s
	minScale := min(s, 6)
	s = max(maxPrec-intDigits, minScale)
	return cdc.Decimal(maxPrec, s)
}

// decimalResult applies the rules above to the operator sub.
func decimalResult(sub string, a, b cdc.Type) cdc.Type {
	p1, s1, p2, s2 := a.Precision, a.Scale, b.Precision, b.Scale
	switch sub {
	case "+", "-":
		s := max(s1, s2)
		return adjust(max(p1-s1, p2-s2)+s+1, s)
	case "*":
		return adjust(p1+p2+1, s1+s2)
	case "/":
		s := max(6, s1+p2+1)
		return adjust(p1-s1+s2+s, s)
	default: // %
		s := max(s1, s2)
		return adjust(min(p1-s1, p2-s2)+s, s)
	}
}

// class groups types for comparison and common-type purposes.
type class uint8

const (
	clNull class = iota
	clNumeric
	clText
	clBool
	clTemporal
	clBinary
)

func classOf(t cdc.Type) class {
	switch {
	case isNullType(t):
		return clNull
	case t.Kind.IsNumeric():
		return clNumeric
	case t.Kind.IsText():
		return clText
	case t.Kind == cdc.KindBoolean:
		return clBool
	case t.Kind == cdc.KindDate || t.Kind == cdc.KindTimestamp:
		return clTemporal
	}
	return clBinary
}

// commonType returns the type values of types a and b widen to (CASE
// branches, COALESCE arguments), and false when they do not mix.
func commonType(a, b *node) (cdc.Type, bool) {
	ta, tb := a.typ, b.typ
	switch {
	case isNullType(ta):
		return tb, true
	case isNullType(tb):
		return ta, true
	case ta == tb:
		return ta, true
	}
	ca, cb := classOf(ta), classOf(tb)
	if ca != cb {
		return cdc.Type{}, false
	}
	switch ca {
	case clNumeric:
		switch {
		case ta.Kind == cdc.KindFloat || ta.Kind == cdc.KindDouble || tb.Kind == cdc.KindFloat || tb.Kind == cdc.KindDouble:
			return cdc.TypeDouble, true
		case ta.Kind == cdc.KindDecimal || tb.Kind == cdc.KindDecimal:
			da, db := asDecimalType(a), asDecimalType(b)
			s := max(da.Scale, db.Scale)
			return adjust(max(da.Precision-da.Scale, db.Precision-db.Scale)+s, s), true
		}
		return cdc.TypeBigInt, true
	case clText:
		return cdc.TypeString, true
	case clTemporal:
		return cdc.TypeTimestamp, true
	}
	return ta, true
}

func isInteger(t cdc.Type) bool { return t.Kind.IsInteger() }
func isFloat(t cdc.Type) bool   { return t.Kind == cdc.KindFloat || t.Kind == cdc.KindDouble }

// typeName renders a type for messages; NULL for the bare NULL type.
func typeName(t cdc.Type) string {
	if isNullType(t) {
		return "NULL"
	}
	return t.String()
}

// castAllowed reports whether CAST(from AS to) is defined.
func castAllowed(from, to cdc.Type) bool {
	cf, ct := classOf(from), classOf(to)
	switch {
	case cf == clNull || cf == ct || cf == clText || ct == clText:
		return true
	case cf == clNumeric && ct == clBool, cf == clBool && ct == clNumeric:
		return true
	case cf == clBinary && ct == clText, cf == clText && ct == clBinary:
		return true
	}
	return false
}
