package cdc

import (
	"errors"
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
	// KindJSON is JSON text (PostgreSQL json/jsonb).
	KindJSON
	// KindUUID is a UUID in its 8-4-4-4-12 hexadecimal text.
	KindUUID
	// KindNative is a type the dialect has no name for (an interval, an
	// array, an enum, inet, …): its values travel as their database's own
	// text form and Type.Native names the type in that database.
	KindNative
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
	KindJSON:      "JSON",
	KindUUID:      "UUID",
	KindNative:    "NATIVE",
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

// IsText reports whether k's values are Go strings: STRING, VARCHAR, CHAR,
// and the text-carried JSON, UUID and NATIVE.
func (k Kind) IsText() bool {
	return k == KindString || k == KindVarchar || k == KindChar || k == KindJSON || k == KindUUID || k == KindNative
}

// IsPlainText reports whether k is STRING, VARCHAR or CHAR (text with no
// other type's meaning).
func (k Kind) IsPlainText() bool { return k == KindString || k == KindVarchar || k == KindChar }

// Type is a column type: a kind plus its parameters. Precision and Scale
// apply to DECIMAL (defaults 10 and 0, as in ClickZetta; Precision 0 is
// PostgreSQL's numeric without a declared precision, whose values keep
// their own digits), Length to VARCHAR and CHAR.
//
// Native is the source database's own name of the type when the dialect's
// name does not say it all (docs/types.md): for KindNative always (the
// PostgreSQL type as format_type prints it: "interval", "integer[]",
// "public.mood"), for JSON "json" (JSON alone is jsonb), for TIMESTAMP
// "timestamp without time zone" (TIMESTAMP alone is timestamptz). A
// target sluice creates in PostgreSQL takes that type.
type Type struct {
	Kind      Kind
	Precision int
	Scale     int
	Length    int
	Native    string
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
	TypeJSON      = Type{Kind: KindJSON}
	TypeUUID      = Type{Kind: KindUUID}
	// TypeNumeric is a DECIMAL without a declared precision.
	TypeNumeric = Type{Kind: KindDecimal}
)

// NativeType returns the KindNative type of the database type named name.
func NativeType(name string) Type { return Type{Kind: KindNative, Native: name} }

// Decimal returns DECIMAL(p,s).
func Decimal(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }

// String renders the type as the dialect writes it: "INT", "DECIMAL(10,2)",
// "VARCHAR(20)".
//
// A DECIMAL without precision is "NUMERIC"; a NATIVE type is its own
// name ("interval"); JSON with Native "json" is "JSON(json)" and a
// TIMESTAMP without time zone "TIMESTAMP_NTZ" (ParseStoredType reads every
// form back).
func (t Type) String() string {
	switch t.Kind {
	case KindDecimal:
		if t.Precision == 0 {
			return "NUMERIC"
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case KindNative:
		return t.Native
	case KindJSON:
		if t.Native == "json" {
			return "JSON(json)"
		}
	case KindTimestamp:
		if t.Native != "" {
			return "TIMESTAMP_NTZ"
		}
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
	"JSON": KindJSON, "UUID": KindUUID, "TIMESTAMP_NTZ": KindTimestamp,
}

// TimestampNTZ is PostgreSQL's timestamp without time zone (ClickZetta's
// and Spark's TIMESTAMP_NTZ): a wall clock, kept as UTC time.Time.
const TimestampNTZ = "timestamp without time zone"

// ParseStoredType is ParseType that also reads back what Type.String
// prints for types a job cannot name: "NUMERIC" (without precision) and
// a NATIVE type's own name. For sluice's own round trips (the SQLite
// sink's SQL functions), never for job files.
func ParseStoredType(s string) (Type, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "NUMERIC":
		return TypeNumeric, nil
	case "JSON(JSON)":
		return Type{Kind: KindJSON, Native: "json"}, nil
	}
	t, err := ParseType(s)
	if errors.Is(err, ErrUnknownType) {
		return NativeType(strings.TrimSpace(s)), nil
	}
	return t, err
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
	if u := strings.ToUpper(s); strings.HasPrefix(u, "ARRAY") && strings.HasSuffix(u, ">") {
		if inner, ok := strings.CutPrefix(strings.TrimSpace(s[len("ARRAY"):]), "<"); ok {
			return arrayType(strings.TrimSuffix(inner, ">"))
		}
	}
	if strings.EqualFold(name, "TIMESTAMP_NTZ") && !paren {
		return Type{Kind: KindTimestamp, Native: TimestampNTZ}, nil
	}
	k, ok := typeAliases[strings.ToUpper(name)]
	if !ok {
		return Type{}, fmt.Errorf("%w %q (known: TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY, JSON, UUID)", ErrUnknownType, name)
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

// arrayType is ARRAY<elem> (ClickZetta, Spark): the PostgreSQL array of
// elem's type, a NATIVE type ("integer[]"); its values are PostgreSQL's
// array text ("{1,2,NULL}"), as stored as text in SQLite.
func arrayType(elem string) (Type, error) {
	e, err := ParseType(elem)
	if err != nil {
		return Type{}, err
	}
	if e.Kind == KindNative {
		return Type{}, fmt.Errorf("%w: ARRAY<%s>: arrays of arrays are written ARRAY<elem> (PostgreSQL arrays have any number of dimensions)", ErrBadType, elem)
	}
	if e.Native != "" { // TIMESTAMP_NTZ
		return NativeType(e.Native + "[]"), nil
	}
	var n string
	switch e.Kind {
	case KindTinyInt, KindSmallInt:
		n = "smallint"
	case KindInt:
		n = "integer"
	case KindBigInt:
		n = "bigint"
	case KindBoolean:
		n = "boolean"
	case KindFloat:
		n = "real"
	case KindDouble:
		n = "double precision"
	case KindDecimal:
		n = fmt.Sprintf("numeric(%d,%d)", e.Precision, e.Scale)
	case KindVarchar:
		n = "character varying"
		if e.Length > 0 {
			n += fmt.Sprintf("(%d)", e.Length)
		}
	case KindChar:
		n = fmt.Sprintf("character(%d)", max(e.Length, 1))
	case KindDate:
		n = "date"
	case KindTimestamp:
		n = "timestamp with time zone"
	case KindBinary:
		n = "bytea"
	case KindJSON:
		n = "jsonb"
	case KindUUID:
		n = "uuid"
	default:
		n = "text"
	}
	return NativeType(n + "[]"), nil
}
