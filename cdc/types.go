package cdc

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is a column type family of the ClickZetta dialect that job files and
// `sluice sql` accept.
type Kind uint8

// The kinds. The order is not significant.
const (
	KindInvalid Kind = iota
	KindTinyInt
	KindSmallInt
	KindInt
	KindBigInt
	KindBoolean
	KindFloat
	KindDouble
	KindDecimal
	KindString
	KindVarchar
	KindChar
	KindDate
	KindTimestamp
	KindBinary
)

var kindNames = [...]string{
	KindInvalid:   "INVALID",
	KindTinyInt:   "TINYINT",
	KindSmallInt:  "SMALLINT",
	KindInt:       "INT",
	KindBigInt:    "BIGINT",
	KindBoolean:   "BOOLEAN",
	KindFloat:     "FLOAT",
	KindDouble:    "DOUBLE",
	KindDecimal:   "DECIMAL",
	KindString:    "STRING",
	KindVarchar:   "VARCHAR",
	KindChar:      "CHAR",
	KindDate:      "DATE",
	KindTimestamp: "TIMESTAMP",
	KindBinary:    "BINARY",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// IsInteger reports whether k is one of the integer kinds.
func (k Kind) IsInteger() bool {
	return k == KindTinyInt || k == KindSmallInt || k == KindInt || k == KindBigInt
}

// IsNumeric reports whether k is an integer, floating or decimal kind.
func (k Kind) IsNumeric() bool {
	return k.IsInteger() || k == KindFloat || k == KindDouble || k == KindDecimal
}

// IsText reports whether k is STRING, VARCHAR or CHAR.
func (k Kind) IsText() bool { return k == KindString || k == KindVarchar || k == KindChar }

// Type is a column type: a kind plus its parameters. Precision and Scale
// apply to DECIMAL (defaults 10 and 0, as in ClickZetta), Length to VARCHAR
// and CHAR.
type Type struct {
	Kind      Kind
	Precision int
	Scale     int
	Length    int
}

// Common types.
var (
	TypeBigInt    = Type{Kind: KindBigInt}
	TypeInt       = Type{Kind: KindInt}
	TypeBoolean   = Type{Kind: KindBoolean}
	TypeDouble    = Type{Kind: KindDouble}
	TypeString    = Type{Kind: KindString}
	TypeTimestamp = Type{Kind: KindTimestamp}
	TypeDate      = Type{Kind: KindDate}
	TypeBinary    = Type{Kind: KindBinary}
)

// Decimal returns DECIMAL(p,s).
func Decimal(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }

// String renders the type as the dialect writes it: "INT", "DECIMAL(10,2)",
// "VARCHAR(20)".
func (t Type) String() string {
	switch t.Kind {
	case KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case KindVarchar, KindChar:
		if t.Length > 0 {
			return fmt.Sprintf("%s(%d)", t.Kind, t.Length)
		}
	}
	return t.Kind.String()
}

// MaxDecimalPrecision is the largest DECIMAL precision accepted (as in
// ClickZetta and Spark).
const MaxDecimalPrecision = 38

var typeAliases = map[string]Kind{
	"TINYINT": KindTinyInt, "SMALLINT": KindSmallInt, "INT": KindInt, "INTEGER": KindInt,
	"BIGINT": KindBigInt, "BOOLEAN": KindBoolean, "BOOL": KindBoolean, "FLOAT": KindFloat,
	"REAL": KindFloat, "DOUBLE": KindDouble, "DECIMAL": KindDecimal, "NUMERIC": KindDecimal,
	"STRING": KindString, "TEXT": KindString, "VARCHAR": KindVarchar, "CHAR": KindChar,
	"DATE": KindDate, "TIMESTAMP": KindTimestamp, "BINARY": KindBinary,
}

// ParseType parses a type name with optional parameters, such as "INT",
// "decimal(38, 10)", "VARCHAR(20)", "STRING". It returns an error wrapping
// ErrUnknownType for a name outside the dialect and ErrBadType for bad
// parameters.
func ParseType(s string) (Type, error) {
	s = strings.TrimSpace(s)
	name, args, paren := s, "", false
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return Type{}, fmt.Errorf("%w: %q: missing ')'", ErrBadType, s)
		}
		name, args = strings.TrimSpace(s[:i]), s[i+1:len(s)-1]
		paren = true
	}
	if strings.EqualFold(name, "DOUBLE PRECISION") {
		name = "DOUBLE"
	}
	k, ok := typeAliases[strings.ToUpper(name)]
	if !ok {
		return Type{}, fmt.Errorf("%w %q (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, BINARY)", ErrUnknownType, name)
	}
	t := Type{Kind: k}
	if paren && strings.TrimSpace(args) == "" {
		return Type{}, fmt.Errorf("%w: %q: empty parameter list", ErrBadType, s)
	}
	var nums []int
	if args != "" {
		for _, a := range strings.Split(args, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(a))
			if err != nil || n < 0 {
				return Type{}, fmt.Errorf("%w: %q: parameter %q is not a non-negative integer", ErrBadType, s, strings.TrimSpace(a))
			}
			nums = append(nums, n)
		}
	}
	switch k {
	case KindDecimal:
		t.Precision, t.Scale = 10, 0
		if len(nums) > 2 {
			return Type{}, fmt.Errorf("%w: %q: DECIMAL takes (precision, scale)", ErrBadType, s)
		}
		if len(nums) >= 1 {
			t.Precision = nums[0]
		}
		if len(nums) == 2 {
			t.Scale = nums[1]
		}
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision || t.Scale > t.Precision {
			return Type{}, fmt.Errorf("%w: %q: need 1 <= precision <= %d and scale <= precision", ErrBadType, s, MaxDecimalPrecision)
		}
	case KindVarchar, KindChar:
		if len(nums) > 1 {
			return Type{}, fmt.Errorf("%w: %q: %s takes one length", ErrBadType, s, k)
		}
		if len(nums) == 1 {
			t.Length = nums[0]
		}
	default:
		if len(nums) > 0 {
			return Type{}, fmt.Errorf("%w: %q: %s takes no parameters", ErrBadType, s, k)
		}
	}
	return t, nil
}
