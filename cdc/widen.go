package cdc

// Widens reports whether type to holds every value of type from and more,
// by one of the widenings a schema change can make to a column (README,
// "Schema changes"): a larger integer (TINYINT < SMALLINT < INT < BIGINT),
// FLOAT to DOUBLE, VARCHAR(n) to VARCHAR(m) with m > n or to STRING,
// DECIMAL(p,s) to DECIMAL(p',s) with p' > p (the same scale) or to DECIMAL
// without a declared precision, and an integer or DECIMAL to STRING (ALTER
// COLUMN … TYPE text: every value keeps its digits, and its text is the
// same in PostgreSQL and SQLite). Any other pair, equal types included, is
// false: a change of scale, of another family or a narrowing is not a
// widening (a float's or a timestamp's text differs between engines).
func Widens(from, to Type) bool {
	switch {
	case from.Kind.IsInteger() && to.Kind.IsInteger():
		return intRank(to.Kind) > intRank(from.Kind)
	case from.Kind == KindFloat && to.Kind == KindDouble:
		return true
	case from.Kind == KindVarchar && to.Kind == KindVarchar:
		return from.Length > 0 && (to.Length == 0 || to.Length > from.Length)
	case from.Kind == KindVarchar && to.Kind == KindString:
		return from.Length > 0
	case (from.Kind.IsInteger() || from.Kind == KindDecimal) && to.Kind == KindString:
		return true
	case from.Kind == KindDecimal && to.Kind == KindDecimal:
		if from.Precision == 0 {
			return false
		}
		return to.Precision == 0 || (to.Precision > from.Precision && to.Scale == from.Scale)
	}
	return false
}

func intRank(k Kind) int {
	switch k {
	case KindTinyInt:
		return 1
	case KindSmallInt:
		return 2
	case KindInt:
		return 3
	}
	return 4
}
