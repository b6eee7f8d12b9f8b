package cdc_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

func ExampleParseType() {
	for _, s := range []string{"int", "decimal(38, 10)", "NUMERIC", "varchar(20)", "TEXT", "DECIMAL(40,2)", "BLOB"} {
		t, err := cdc.ParseType(s)
		switch {
		case errors.Is(err, cdc.ErrUnknownType):
			fmt.Printf("%-16s unknown type\n", s)
		case errors.Is(err, cdc.ErrBadType):
			fmt.Printf("%-16s bad parameters\n", s)
		default:
			fmt.Printf("%-16s %s\n", s, t)
		}
	}
	// Output:
	// int              INT
	// decimal(38, 10)  DECIMAL(38,10)
	// NUMERIC          DECIMAL(10,0)
	// varchar(20)      VARCHAR(20)
	// TEXT             STRING
	// DECIMAL(40,2)    bad parameters
	// BLOB             unknown type
}

func ExampleCoerce_decimal() {
	amount := cdc.Decimal(10, 2)
	for _, v := range []any{"1500", 1500.1, "1234.565", "-0.005", int64(7)} {
		d, err := cdc.Coerce(v, amount)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%v → %s\n", v, cdc.FormatValue(d, amount))
	}
	_, err := cdc.Coerce("123456789", amount)
	fmt.Println(err)

	// DECIMAL(38,10) keeps every digit: no float64 on the way.
	big, _ := cdc.Coerce("1234567890123456789012345678.0123456789", cdc.Decimal(38, 10))
	fmt.Println(big.(decimal.Decimal).String())
	// Output:
	// 1500 → 1500.00
	// 1500.1 → 1500.10
	// 1234.565 → 1234.57
	// -0.005 → -0.01
	// 7 → 7.00
	// cannot store "123456789" (text) as DECIMAL(10,2): more than 8 digits before the decimal point
	// 1234567890123456789012345678.0123456789
}

func ExampleFormatValue() {
	ts := time.Date(2024, 3, 10, 12, 34, 56, 500000000, time.FixedZone("", 5*3600+1800))
	fmt.Println(cdc.FormatValue(decimal.NewFromInt(1500), cdc.Decimal(10, 2)))
	fmt.Println(cdc.FormatValue(ts, cdc.TypeTimestamp))
	fmt.Println(cdc.FormatValue(ts, cdc.TypeDate))
	fmt.Println(cdc.FormatValue([]byte("hi"), cdc.TypeBinary))
	fmt.Println(cdc.FormatValue(nil, cdc.TypeString))
	// Output:
	// 1500.00
	// 2024-03-10 12:34:56.5+05:30
	// 2024-03-10
	// 0x6869
	// NULL
}

func ExampleValueError() {
	_, err := cdc.Coerce(int64(300), cdc.Type{Kind: cdc.KindTinyInt})
	var ve *cdc.ValueError
	if errors.As(err, &ve) {
		ve.Key, ve.Column = []any{int64(42)}, "qty" // the caller knows the row
	}
	fmt.Println(err)
	fmt.Println(errors.Is(err, cdc.ErrBadValue))
	// Output:
	// row with key (42), column "qty": cannot store 300 (integer) as TINYINT: out of range
	// true
}

func ExampleOffset() {
	o := cdc.SingleOffset("3")
	fmt.Println(o, o.Encode())

	shards := cdc.Offset{}.With("shard-2", "b").With("shard-1", "a")
	enc := shards.Encode()
	fmt.Println(shards, enc)

	back, err := cdc.DecodeOffset(enc)
	fmt.Println(back.Equal(shards), err)

	fmt.Println(cdc.Offset{})
	_, err = cdc.DecodeOffset("3")
	fmt.Println(errors.Is(err, cdc.ErrBadOffset))
	// Output:
	// 3 {"positions":{"":"3"}}
	// shard-1=a, shard-2=b {"positions":{"shard-1":"a","shard-2":"b"}}
	// true <nil>
	// (start)
	// true
}
