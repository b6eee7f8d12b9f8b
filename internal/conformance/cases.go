package conformance

import (
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
)

// Table is a table a case creates (and enables change tracking on).
type Table struct {
	Name   string
	Schema cdc.Schema
}

// Case is one stream-semantics case: a table with rows written before the
// stream exists, a stream, transactions after it, and the exact changes
// the first read returns. With Then set, the suite consumes that read
// (Advance to its read point), applies Then.After and expects Then.Want.
type Case struct {
	Name            string
	Table           Table
	Mode            string // dsl.ModeStandard (default) or dsl.ModeAppendOnly
	ShowInitialRows bool
	Before          [][]Op // transactions before CREATE TABLE STREAM
	After           [][]Op // transactions after it
	Want            []Row  // in commit order
	Then            *Phase
}

// Phase is a second round of a Case, after consuming the first read.
type Phase struct {
	After [][]Op
	Want  []Row
}

// D is a DECIMAL value from its text (panics on bad text).
func D(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// Orders is the seed's table: orders(id INT, name STRING, amount
// DECIMAL(10,2), status STRING, PRIMARY KEY (id)).
var Orders = Table{Name: "orders", Schema: cdc.Schema{
	Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeInt, NotNull: true},
		{Name: "name", Type: cdc.TypeString},
		{Name: "amount", Type: cdc.Decimal(10, 2)},
		{Name: "status", Type: cdc.TypeString},
	},
	Key: []string{"id"},
}}

// Stock has a composite key: stock(region STRING, id INT, qty BIGINT, PRIMARY KEY (region, id)).
var Stock = Table{Name: "stock", Schema: cdc.Schema{
	Columns: []cdc.Column{
		{Name: "region", Type: cdc.TypeString, NotNull: true},
		{Name: "id", Type: cdc.TypeInt, NotNull: true},
		{Name: "qty", Type: cdc.TypeBigInt},
	},
	Key: []string{"region", "id"},
}}

// Weird has reserved-word and unicode identifiers: "order"(id INT, "user"
// STRING, "金额" DECIMAL(10,2), PRIMARY KEY (id)).
var Weird = Table{Name: "order", Schema: cdc.Schema{
	Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeInt, NotNull: true},
		{Name: "user", Type: cdc.TypeString},
		{Name: "金额", Type: cdc.Decimal(10, 2)},
	},
	Key: []string{"id"},
}}

// Exact has wide decimals: exact(id INT, a DECIMAL(10,2), b DECIMAL(38,10), PRIMARY KEY (id)).
var Exact = Table{Name: "exact", Schema: cdc.Schema{
	Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeInt, NotNull: true},
		{Name: "a", Type: cdc.Decimal(10, 2)},
		{Name: "b", Type: cdc.Decimal(38, 10)},
	},
	Key: []string{"id"},
}}

// AllTypes has one column of each other type.
var AllTypes = Table{Name: "all_types", Schema: cdc.Schema{
	Columns: []cdc.Column{
		{Name: "id", Type: cdc.TypeBigInt, NotNull: true},
		{Name: "flag", Type: cdc.TypeBoolean},
		{Name: "ratio", Type: cdc.TypeDouble},
		{Name: "day", Type: cdc.TypeDate},
		{Name: "at", Type: cdc.TypeTimestamp},
		{Name: "bytes", Type: cdc.TypeBinary},
		{Name: "code", Type: cdc.Type{Kind: cdc.KindVarchar, Length: 8}},
	},
	Key: []string{"id"},
}}

// Events has no primary key (APPEND_ONLY only): events(msg STRING, n INT).
var Events = Table{Name: "events", Schema: cdc.Schema{
	Columns: []cdc.Column{
		{Name: "msg", Type: cdc.TypeString},
		{Name: "n", Type: cdc.TypeInt},
	},
}}

func tx(ops ...Op) []Op { return ops }

var shanghai = time.FixedZone("", 8*3600)

// Cases is the table of stream-semantics cases. Expected rows are written
// by hand from DESIGN.md, in commit order (the order of the last change
// contributing to each net change; rows of one version — initial rows —
// in key order).
var Cases = []Case{
	{
		Name:  "insert then update is one INSERT with the final values",
		Table: Orders,
		After: [][]Op{
			tx(Insert("orders", 1, "Alice", D("1000.00"), "active")),
			tx(Update("orders", Key(1), Set("amount", D("1500.00")))),
		},
		Want: []Row{Ins(1, "Alice", D("1500.00"), "active")},
	},
	{
		Name:  "insert then delete is nothing",
		Table: Orders,
		After: [][]Op{
			tx(Insert("orders", 1, "Alice", D("1000.00"), "active")),
			tx(Delete("orders", 1)),
		},
	},
	{
		Name:   "update then update is UPDATE_BEFORE original, UPDATE_AFTER final",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After: [][]Op{
			tx(Update("orders", Key(1), Set("amount", D("1100.00")))),
			tx(Update("orders", Key(1), Set("amount", D("1500.00")), Set("status", "vip"))),
		},
		Want: []Row{
			UB(1, "Alice", D("1000.00"), "active"),
			UA(1, "Alice", D("1500.00"), "vip"),
		},
	},
	{
		Name:   "update back to the original values is nothing",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After: [][]Op{
			tx(Update("orders", Key(1), Set("amount", D("1500.00")))),
			tx(Update("orders", Key(1), Set("amount", D("1000.00")))),
		},
	},
	{
		Name:   "update that changes nothing is nothing",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After:  [][]Op{tx(Update("orders", Key(1), Set("amount", D("1000.00"))))},
	},
	{
		Name:   "delete is DELETE with the values at the offset",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 3, "Carol", D("500.00"), "active"))},
		After: [][]Op{
			tx(Update("orders", Key(3), Set("status", "closing"))),
			tx(Delete("orders", 3)),
		},
		Want: []Row{Del(3, "Carol", D("500.00"), "active")},
	},
	{
		Name:   "delete and re-insert of the same values is nothing",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After: [][]Op{
			tx(Delete("orders", 1)),
			tx(Insert("orders", 1, "Alice", D("1000.00"), "active")),
		},
	},
	{
		Name:   "delete and re-insert of other values is UPDATE_BEFORE/UPDATE_AFTER",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After: [][]Op{
			tx(Delete("orders", 1)),
			tx(Insert("orders", 1, "Alicia", D("1000.00"), "active")),
		},
		Want: []Row{
			UB(1, "Alice", D("1000.00"), "active"),
			UA(1, "Alicia", D("1000.00"), "active"),
		},
	},
	{
		Name:  "several keys: the seed's changes, in commit order",
		Table: Orders,
		Before: [][]Op{tx(
			Insert("orders", 1, "Alice", D("1000.00"), "active"),
			Insert("orders", 2, "Bob", D("2000.00"), "active"),
			Insert("orders", 3, "Carol", D("500.00"), "active"),
		)},
		After: [][]Op{
			tx(Insert("orders", 4, "Dave", D("3000.00"), "active")),
			tx(Update("orders", Key(1), Set("amount", D("1500.00")))),
			tx(Delete("orders", 3)),
		},
		Want: []Row{
			Ins(4, "Dave", D("3000.00"), "active"),
			UB(1, "Alice", D("1000.00"), "active"),
			UA(1, "Alice", D("1500.00"), "active"),
			Del(3, "Carol", D("500.00"), "active"),
		},
	},
	{
		Name:  "several changes in one transaction",
		Table: Orders,
		After: [][]Op{tx(
			Insert("orders", 1, "Alice", D("1.00"), "a"),
			Insert("orders", 2, "Bob", D("2.00"), "b"),
			Update("orders", Key(1), Set("amount", D("1.50"))),
		)},
		Want: []Row{
			Ins(2, "Bob", D("2.00"), "b"),
			Ins(1, "Alice", D("1.50"), "a"),
		},
	},
	{
		Name:  "composite primary key",
		Table: Stock,
		Before: [][]Op{tx(
			Insert("stock", "eu", 1, 5),
			Insert("stock", "us", 1, 7),
		)},
		After: [][]Op{
			tx(Update("stock", Key("eu", 1), Set("qty", 6))),
			tx(Insert("stock", "eu", 2, 1)),
			tx(Delete("stock", "us", 1)),
		},
		Want: []Row{
			UB("eu", 1, 5), UA("eu", 1, 6),
			Ins("eu", 2, 1),
			Del("us", 1, 7),
		},
	},
	{
		Name:   "update of the primary key is DELETE of the old key and INSERT of the new",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After:  [][]Op{tx(Update("orders", Key(1), Set("id", 10)))},
		Want: []Row{
			Del(1, "Alice", D("1000.00"), "active"),
			Ins(10, "Alice", D("1000.00"), "active"),
		},
	},
	{
		Name:   "primary key changed and changed back is nothing",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After: [][]Op{
			tx(Update("orders", Key(1), Set("id", 10))),
			tx(Update("orders", Key(10), Set("id", 1))),
		},
	},
	{
		Name:   "APPEND_ONLY returns every insert with its inserted values",
		Table:  Orders,
		Mode:   dsl.ModeAppendOnly,
		Before: [][]Op{tx(Insert("orders", 1, "Alice", D("1000.00"), "active"))},
		After: [][]Op{
			tx(Insert("orders", 2, "Bob", D("2000.00"), "active")),
			tx(Update("orders", Key(2), Set("amount", D("2500.00")))),
			tx(Delete("orders", 2)),
			tx(Update("orders", Key(1), Set("amount", D("1.00")))),
			tx(Delete("orders", 1)),
			tx(Insert("orders", 3, "Carol", D("500.00"), "new")),
			tx(Update("orders", Key(3), Set("id", 30))), // a key change is an update, not an insert
		},
		Want: []Row{
			Ins(2, "Bob", D("2000.00"), "active"),
			Ins(3, "Carol", D("500.00"), "new"),
		},
	},
	{
		Name:  "APPEND_ONLY on a table without primary key",
		Table: Events,
		Mode:  dsl.ModeAppendOnly,
		After: [][]Op{
			tx(Insert("events", "a", 1), Insert("events", "a", 1)),
			tx(Insert("events", nil, nil)),
		},
		Want: []Row{Ins("a", 1), Ins("a", 1), Ins(nil, nil)},
	},
	{
		Name:            "SHOW_INITIAL_ROWS: first read is the rows at the read point as INSERT, then only new changes",
		Table:           Orders,
		ShowInitialRows: true,
		Before: [][]Op{tx(
			Insert("orders", 1, "Alice", D("1000.00"), "active"),
			Insert("orders", 2, "Bob", D("2000.00"), "active"),
			Insert("orders", 3, "Carol", D("500.00"), "active"),
		)},
		After: [][]Op{
			tx(Update("orders", Key(1), Set("amount", D("1500.00")))),
			tx(Delete("orders", 3)),
			tx(Insert("orders", 4, "Dave", D("3000.00"), "active")),
		},
		Want: []Row{
			Ins(2, "Bob", D("2000.00"), "active"), // untouched: the creation point's version
			Ins(1, "Alice", D("1500.00"), "active"),
			Ins(4, "Dave", D("3000.00"), "active"),
		},
		Then: &Phase{
			After: [][]Op{tx(Update("orders", Key(2), Set("status", "vip")))},
			Want: []Row{
				UB(2, "Bob", D("2000.00"), "active"),
				UA(2, "Bob", D("2000.00"), "vip"),
			},
		},
	},
	{
		Name:            "SHOW_INITIAL_ROWS with nothing changed returns the initial rows once",
		Table:           Orders,
		ShowInitialRows: true,
		Before: [][]Op{tx(
			Insert("orders", 1, "Alice", D("1000.00"), "active"),
			Insert("orders", 2, "Bob", D("2000.00"), "active"),
		)},
		Want: []Row{
			Ins(1, "Alice", D("1000.00"), "active"),
			Ins(2, "Bob", D("2000.00"), "active"),
		},
		Then: &Phase{},
	},
	{
		Name:            "SHOW_INITIAL_ROWS with APPEND_ONLY: the rows present at creation, then every insert",
		Table:           Orders,
		Mode:            dsl.ModeAppendOnly,
		ShowInitialRows: true,
		Before: [][]Op{tx(
			Insert("orders", 1, "Alice", D("1000.00"), "active"),
			Insert("orders", 3, "Carol", D("500.00"), "active"),
		)},
		After: [][]Op{
			tx(Update("orders", Key(1), Set("amount", D("1500.00")))),
			tx(Delete("orders", 3)),
			tx(Insert("orders", 4, "Dave", D("3000.00"), "active")),
		},
		Want: []Row{
			Ins(1, "Alice", D("1000.00"), "active"),
			Ins(3, "Carol", D("500.00"), "active"),
			Ins(4, "Dave", D("3000.00"), "active"),
		},
		Then: &Phase{
			After: [][]Op{tx(Insert("orders", 5, "Eve", D("1.00"), "x"), Delete("orders", 4))},
			Want:  []Row{Ins(5, "Eve", D("1.00"), "x")},
		},
	},
	{
		Name:  "DECIMAL(10,2) and DECIMAL(38,10) values are exact",
		Table: Exact,
		After: [][]Op{
			tx(Insert("exact", 1, D("12345678.91"), D("1234567890123456789012345678.0123456789"))),
			tx(Insert("exact", 2, D("0.10"), D("0.0000000001"))),
			tx(Update("exact", Key(2), Set("b", D("-9999999999999999999999999999.9999999999")))),
		},
		Want: []Row{
			Ins(1, D("12345678.91"), D("1234567890123456789012345678.0123456789")),
			Ins(2, D("0.10"), D("-9999999999999999999999999999.9999999999")),
		},
	},
	{
		Name:   "NULLs: NULL to value is an update, NULL to NULL is nothing",
		Table:  Orders,
		Before: [][]Op{tx(Insert("orders", 1, nil, nil, nil), Insert("orders", 2, nil, nil, nil))},
		After: [][]Op{
			tx(Update("orders", Key(1), Set("name", "x"))),
			tx(Update("orders", Key(2), Set("name", nil))),
			tx(Insert("orders", 3, nil, D("1.00"), nil)),
		},
		Want: []Row{
			UB(1, nil, nil, nil), UA(1, "x", nil, nil),
			Ins(3, nil, D("1.00"), nil),
		},
	},
	{
		Name:   "reserved-word and unicode identifiers",
		Table:  Weird,
		Before: [][]Op{tx(Insert("order", 1, "ann", D("1.00")))},
		After: [][]Op{
			tx(Update("order", Key(1), Set("金额", D("2.50")))),
			tx(Insert("order", 2, "bob", D("3.00"))),
		},
		Want: []Row{
			UB(1, "ann", D("1.00")), UA(1, "ann", D("2.50")),
			Ins(2, "bob", D("3.00")),
		},
	},
	{
		Name:  "every type round-trips: BOOLEAN, DOUBLE, DATE, TIMESTAMP with zone, BINARY, VARCHAR",
		Table: AllTypes,
		After: [][]Op{tx(
			Insert("all_types", int64(1), true, 0.1, time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC),
				time.Date(2024, 1, 15, 10, 0, 0, 123456000, shanghai), []byte{0, 1, 0xff}, "abc"),
			Insert("all_types", int64(2), false, -1.5e300, time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC),
				time.Date(2024, 1, 15, 2, 0, 0, 0, time.UTC), []byte{}, ""),
		)},
		Want: []Row{
			Ins(int64(1), true, 0.1, time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC),
				time.Date(2024, 1, 15, 10, 0, 0, 123456000, shanghai), []byte{0, 1, 0xff}, "abc"),
			Ins(int64(2), false, -1.5e300, time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC),
				time.Date(2024, 1, 15, 2, 0, 0, 0, time.UTC), []byte{}, ""),
		},
	},
}
