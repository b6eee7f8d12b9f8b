package cdc

import (
	"errors"
	"strings"
	"testing"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in   string
		want Type
	}{
		// Every kind under its dialect name.
		{"TINYINT", Type{Kind: KindTinyInt}},
		{"SMALLINT", Type{Kind: KindSmallInt}},
		{"INT", Type{Kind: KindInt}},
		{"BIGINT", Type{Kind: KindBigInt}},
		{"BOOLEAN", Type{Kind: KindBoolean}},
		{"FLOAT", Type{Kind: KindFloat}},
		{"DOUBLE", Type{Kind: KindDouble}},
		{"DECIMAL", Type{Kind: KindDecimal, Precision: 10, Scale: 0}},
		{"STRING", Type{Kind: KindString}},
		{"VARCHAR", Type{Kind: KindVarchar}},
		{"CHAR", Type{Kind: KindChar}},
		{"DATE", Type{Kind: KindDate}},
		{"TIMESTAMP", Type{Kind: KindTimestamp}},
		{"BINARY", Type{Kind: KindBinary}},

		// Aliases.
		{"INTEGER", Type{Kind: KindInt}},
		{"BOOL", Type{Kind: KindBoolean}},
		{"REAL", Type{Kind: KindFloat}},
		{"DOUBLE PRECISION", Type{Kind: KindDouble}},
		{"double precision", Type{Kind: KindDouble}},
		{"NUMERIC", Type{Kind: KindDecimal, Precision: 10, Scale: 0}},
		{"NUMERIC(12,4)", Type{Kind: KindDecimal, Precision: 12, Scale: 4}},
		{"TEXT", Type{Kind: KindString}},

		// Case and white space.
		{"int", Type{Kind: KindInt}},
		{"BigInt", Type{Kind: KindBigInt}},
		{"  timestamp\t", Type{Kind: KindTimestamp}},

		// Parameters.
		{"DECIMAL(10,2)", Type{Kind: KindDecimal, Precision: 10, Scale: 2}},
		{"decimal(38, 10)", Type{Kind: KindDecimal, Precision: 38, Scale: 10}},
		{"DECIMAL ( 7 , 3 )", Type{Kind: KindDecimal, Precision: 7, Scale: 3}},
		{"DECIMAL(5)", Type{Kind: KindDecimal, Precision: 5, Scale: 0}},
		{"DECIMAL(1,0)", Type{Kind: KindDecimal, Precision: 1, Scale: 0}},
		{"DECIMAL(38,38)", Type{Kind: KindDecimal, Precision: 38, Scale: 38}},
		{"VARCHAR(20)", Type{Kind: KindVarchar, Length: 20}},
		{"varchar( 255 )", Type{Kind: KindVarchar, Length: 255}},
		{"CHAR(1)", Type{Kind: KindChar, Length: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseType(tt.in)
			if err != nil {
				t.Fatalf("ParseType(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseType(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseTypeErrors(t *testing.T) {
	tests := []struct {
		in      string
		is      error
		mention string // a substring the message must contain
	}{
		{"", ErrUnknownType, "known:"},
		{"BLOB", ErrUnknownType, `"BLOB"`},
		{"LONG", ErrUnknownType, "DECIMAL(p,s)"},
		{"TIMESTAMP WITH TIME ZONE", ErrUnknownType, "TIMESTAMP WITH TIME ZONE"},
		{"MONEY(10,2)", ErrUnknownType, `"MONEY"`},

		{"DECIMAL(10,2", ErrBadType, "missing ')'"},
		{"DECIMAL(10,2) NOT NULL", ErrBadType, "missing ')'"},
		{"DECIMAL(39,0)", ErrBadType, "precision"},
		{"DECIMAL(0)", ErrBadType, "precision"},
		{"DECIMAL(0,0)", ErrBadType, "precision"},
		{"DECIMAL(5,6)", ErrBadType, "scale <= precision"},
		{"DECIMAL(10,2,1)", ErrBadType, "(precision, scale)"},
		{"DECIMAL(a,2)", ErrBadType, `"a"`},
		{"DECIMAL(-1,0)", ErrBadType, "non-negative"},
		{"DECIMAL(10,)", ErrBadType, "non-negative"},
		{"DECIMAL(1.5)", ErrBadType, `"1.5"`},
		{"VARCHAR(1,2)", ErrBadType, "one length"},
		{"VARCHAR(x)", ErrBadType, `"x"`},
		{"INT(11)", ErrBadType, "no parameters"},
		{"TIMESTAMP(6)", ErrBadType, "no parameters"},
		{"DOUBLE PRECISION(5)", ErrBadType, "no parameters"},
		// An empty parameter list is not the same as none (SQL rejects INT()).
		{"DECIMAL()", ErrBadType, "empty parameter list"},
		{"VARCHAR( )", ErrBadType, "empty parameter list"},
		{"INT()", ErrBadType, "empty parameter list"},
		{"DOUBLE PRECISION()", ErrBadType, "empty parameter list"},
		{"NOPE()", ErrUnknownType, `"NOPE"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseType(tt.in)
			if err == nil {
				t.Fatalf("ParseType(%q) = %+v, want an error wrapping %v", tt.in, got, tt.is)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("ParseType(%q) error %q does not wrap %v", tt.in, err, tt.is)
			}
			for _, other := range []error{ErrUnknownType, ErrBadType} {
				if other != tt.is && errors.Is(err, other) {
					t.Errorf("ParseType(%q) error %q also wraps %v", tt.in, err, other)
				}
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("ParseType(%q) error %q does not mention %q", tt.in, err, tt.mention)
			}
			if got != (Type{}) {
				t.Errorf("ParseType(%q) returned %+v with its error, want the zero Type", tt.in, got)
			}
		})
	}
}

func TestTypeString(t *testing.T) {
	tests := []struct {
		in   Type
		want string
	}{
		{Type{Kind: KindTinyInt}, "TINYINT"},
		{Type{Kind: KindSmallInt}, "SMALLINT"},
		{TypeInt, "INT"},
		{TypeBigInt, "BIGINT"},
		{TypeBoolean, "BOOLEAN"},
		{Type{Kind: KindFloat}, "FLOAT"},
		{TypeDouble, "DOUBLE"},
		{Decimal(10, 2), "DECIMAL(10,2)"},
		{Decimal(38, 10), "DECIMAL(38,10)"},
		{Decimal(10, 0), "DECIMAL(10,0)"},
		{TypeString, "STRING"},
		{Type{Kind: KindVarchar, Length: 20}, "VARCHAR(20)"},
		{Type{Kind: KindVarchar}, "VARCHAR"},
		{Type{Kind: KindChar, Length: 3}, "CHAR(3)"},
		{Type{Kind: KindChar}, "CHAR"},
		{TypeDate, "DATE"},
		{TypeTimestamp, "TIMESTAMP"},
		{TypeBinary, "BINARY"},
		{Type{}, "INVALID"},
		{Type{Kind: Kind(200)}, "Kind(200)"},
		// Parameters that do not apply to the kind are not printed.
		{Type{Kind: KindInt, Precision: 5, Scale: 1, Length: 3}, "INT"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTypeStringParses checks that the dialect text of every type parses
// back to the same type.
func TestTypeStringParses(t *testing.T) {
	for _, typ := range []Type{
		{Kind: KindTinyInt}, {Kind: KindSmallInt}, TypeInt, TypeBigInt, TypeBoolean,
		{Kind: KindFloat}, TypeDouble, Decimal(10, 2), Decimal(38, 10), Decimal(1, 1),
		TypeString, {Kind: KindVarchar, Length: 20}, {Kind: KindVarchar}, {Kind: KindChar, Length: 1},
		TypeDate, TypeTimestamp, TypeBinary,
	} {
		got, err := ParseType(typ.String())
		if err != nil || got != typ {
			t.Errorf("ParseType(%q) = %+v, %v; want %+v", typ.String(), got, err, typ)
		}
	}
}

func TestKindPredicates(t *testing.T) {
	tests := []struct {
		k                      Kind
		integer, numeric, text bool
	}{
		{KindInvalid, false, false, false},
		{KindTinyInt, true, true, false},
		{KindSmallInt, true, true, false},
		{KindInt, true, true, false},
		{KindBigInt, true, true, false},
		{KindBoolean, false, false, false},
		{KindFloat, false, true, false},
		{KindDouble, false, true, false},
		{KindDecimal, false, true, false},
		{KindString, false, false, true},
		{KindVarchar, false, false, true},
		{KindChar, false, false, true},
		{KindDate, false, false, false},
		{KindTimestamp, false, false, false},
		{KindBinary, false, false, false},
	}
	for _, tt := range tests {
		if got := tt.k.IsInteger(); got != tt.integer {
			t.Errorf("%v.IsInteger() = %v, want %v", tt.k, got, tt.integer)
		}
		if got := tt.k.IsNumeric(); got != tt.numeric {
			t.Errorf("%v.IsNumeric() = %v, want %v", tt.k, got, tt.numeric)
		}
		if got := tt.k.IsText(); got != tt.text {
			t.Errorf("%v.IsText() = %v, want %v", tt.k, got, tt.text)
		}
	}
}

func TestOp(t *testing.T) {
	tests := []struct {
		op   Op
		text string
	}{
		{OpInsert, "INSERT"},
		{OpUpdateBefore, "UPDATE_BEFORE"},
		{OpUpdateAfter, "UPDATE_AFTER"},
		{OpDelete, "DELETE"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.text {
			t.Errorf("Op(%d).String() = %q, want %q", tt.op, got, tt.text)
		}
		for _, in := range []string{tt.text, strings.ToLower(tt.text)} {
			got, err := ParseOp(in)
			if err != nil || got != tt.op {
				t.Errorf("ParseOp(%q) = %v, %v; want %v", in, got, err, tt.op)
			}
		}
	}
	if got := Op(0).String(); got != "Op(0)" {
		t.Errorf("Op(0).String() = %q, want Op(0)", got)
	}
	if got := Op(9).String(); got != "Op(9)" {
		t.Errorf("Op(9).String() = %q, want Op(9)", got)
	}
	for _, in := range []string{"", "UPDATE", "INSERTED", " INSERT"} {
		if op, err := ParseOp(in); !errors.Is(err, ErrBadValue) {
			t.Errorf("ParseOp(%q) = %v, %v; want an error wrapping ErrBadValue", in, op, err)
		}
	}
}
