package sqlitex

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
)

func TestParseURL(t *testing.T) {
	wd, _ := filepath.Abs(".")
	for _, c := range []struct {
		url, path string
		mem, bad  bool
	}{
		{url: "sqlite:orders.db", path: filepath.Join(wd, "orders.db")},
		{url: "sqlite://orders.db", path: filepath.Join(wd, "orders.db")},
		{url: "sqlite:///tmp/x.db", path: "/tmp/x.db"},
		{url: "sqlite:/tmp/x.db", path: "/tmp/x.db"},
		{url: "SQLITE:a/b.db", path: filepath.Join(wd, "a/b.db")},
		{url: "sqlite::memory:", path: ":memory:", mem: true},
		{url: "sqlite:", bad: true},
		{url: "sqlite:x.db?mode=ro", bad: true},
		{url: "postgres://x", bad: true},
	} {
		loc, err := ParseURL(c.url)
		if c.bad {
			if err == nil {
				t.Errorf("%s: no error", c.url)
			}
			continue
		}
		if err != nil || loc.Path != c.path || loc.Memory != c.mem {
			t.Errorf("%s: %+v, %v; want %s", c.url, loc, err, c.path)
		}
	}
}

func TestTypesRoundTrip(t *testing.T) {
	for _, s := range []string{"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "FLOAT", "DOUBLE",
		"DECIMAL(10,2)", "DECIMAL(38,10)", "STRING", "VARCHAR(20)", "CHAR(3)", "DATE", "TIMESTAMP", "BINARY"} {
		typ, err := cdc.ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := LogicalType(DeclaredType(typ)); got != typ {
			t.Errorf("%s: declared %s reads back as %s", s, DeclaredType(typ), got)
		}
	}
	for decl, want := range map[string]cdc.Type{
		"INTEGER": cdc.TypeBigInt, "REAL": cdc.TypeDouble, "NUMERIC": cdc.TypeNumeric,
		"BLOB": cdc.TypeBinary, "": cdc.TypeBinary, "NVARCHAR(5)": cdc.TypeString,
		"UNSIGNED BIG INT": cdc.TypeBigInt, "DATETIME": {Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "double precision": cdc.TypeDouble,
		"datetime(6)": {Kind: cdc.KindTimestamp, Native: cdc.TimestampNTZ}, "timestamp with time zone": cdc.TypeTimestamp, "TIME": cdc.TypeString,
		"DECIMAL": cdc.TypeNumeric, "decimal(10,2)": cdc.Decimal(10, 2), "MONEY": cdc.TypeNumeric, "DATE": cdc.TypeDate,
	} {
		if got := LogicalType(decl); got != want {
			t.Errorf("LogicalType(%q) = %s, want %s", decl, got, want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote(`a"b`); got != `"a""b"` {
		t.Errorf("Quote = %s", got)
	}
	if got := Quote("金额"); got != `"金额"` {
		t.Errorf("Quote = %s", got)
	}
}

func TestEncodeDecode(t *testing.T) {
	zone := time.FixedZone("", -5*3600)
	for _, c := range []struct {
		v      any
		typ    cdc.Type
		stored any
	}{
		{decimal.RequireFromString("1500"), cdc.Decimal(10, 2), "1500.00"},
		{"1234567890123456789012345678.0123456789", cdc.Decimal(38, 10), "1234567890123456789012345678.0123456789"},
		{true, cdc.TypeBoolean, int64(1)},
		{false, cdc.TypeBoolean, int64(0)},
		{int64(7), cdc.TypeInt, int64(7)},
		{0.25, cdc.TypeDouble, 0.25},
		{time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), cdc.TypeDate, "2024-01-15"},
		{time.Date(2024, 1, 15, 10, 0, 0, 500000000, zone), cdc.TypeTimestamp, "2024-01-15 10:00:00.5-05:00"},
		{[]byte{1, 2}, cdc.TypeBinary, []byte{1, 2}},
		{"x", cdc.TypeString, "x"},
		{nil, cdc.TypeString, nil},
	} {
		got, err := Encode(c.v, c.typ)
		if err != nil {
			t.Errorf("Encode(%v, %s): %v", c.v, c.typ, err)
			continue
		}
		if b, ok := got.([]byte); ok {
			if !bytes.Equal(b, c.stored.([]byte)) {
				t.Errorf("Encode(%v) = %v", c.v, got)
			}
		} else if got != c.stored {
			t.Errorf("Encode(%v, %s) = %#v, want %#v", c.v, c.typ, got, c.stored)
		}
		back, err := Decode(got, c.typ)
		if err != nil {
			t.Errorf("Decode(%v, %s): %v", got, c.typ, err)
			continue
		}
		if cdc.FormatValue(back, c.typ) != cdc.FormatValue(mustCoerce(t, c.v, c.typ), c.typ) {
			t.Errorf("round trip of %v as %s: %v", c.v, c.typ, back)
		}
	}
	if _, err := Encode("12345678901.5", cdc.Decimal(10, 2)); err == nil {
		t.Errorf("Encode of a too-wide decimal: no error")
	}
	ts, err := Decode("2024-01-15 10:00:00.123+00:00", cdc.TypeTimestamp)
	if err != nil || !ts.(time.Time).Equal(time.Date(2024, 1, 15, 10, 0, 0, 123000000, time.UTC)) {
		t.Errorf("Decode timestamp: %v, %v", ts, err)
	}
}

func mustCoerce(t *testing.T, v any, typ cdc.Type) any {
	c, err := cdc.Coerce(v, typ)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOpenAndTableSchema(t *testing.T) {
	ctx := t.Context()
	loc, err := ParseURL("sqlite:" + filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v", mode, err)
	}
	s := cdc.Schema{Columns: []cdc.Column{
		{Name: "b", Type: cdc.TypeString, NotNull: true},
		{Name: "user", Type: cdc.Decimal(12, 3)},
		{Name: "a", Type: cdc.TypeInt, NotNull: true},
	}, Key: []string{"a", "b"}}
	if _, err := db.ExecContext(ctx, CreateTableSQL("order", s, false)); err != nil {
		t.Fatal(err)
	}
	got, ok, err := TableSchema(ctx, db, "ORDER")
	if err != nil || !ok {
		t.Fatalf("TableSchema: %v %v", ok, err)
	}
	if len(got.Columns) != 3 || got.Columns[1].Type != cdc.Decimal(12, 3) || got.Key[0] != "a" || got.Key[1] != "b" || !got.Columns[2].NotNull {
		t.Errorf("TableSchema = %+v", got)
	}
	if _, ok, _ := TableSchema(ctx, db, "missing"); ok {
		t.Errorf("missing table exists")
	}
	if name, ok, _ := TableName(ctx, db, "Order"); !ok || name != "order" {
		t.Errorf("TableName = %q %v", name, ok)
	}
	mem, err := Open(ctx, Location{Path: ":memory:", Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := mem.ExecContext(ctx, "CREATE TABLE x (a)"); err != nil {
		t.Fatal(err)
	}
	c1, _ := mem.Conn(ctx)
	c2, _ := mem.Conn(ctx)
	defer c1.Close()
	defer c2.Close()
	var n int
	if err := c2.QueryRowContext(ctx, "SELECT count(*) FROM x").Scan(&n); err != nil {
		t.Errorf("in-memory database not shared by the pool: %v", err)
	}
}
