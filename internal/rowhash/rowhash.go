// Package rowhash computes, inside SQLite and PostgreSQL, hashes of rows in
// a canonical text form for `sluice diff` (runner.Runner.Diff), and the same
// hashes in Go.
//
// The canonical text of a non-NULL value of logical type t is
// rowcmp.Text(rowcmp.Canon(v, t)): integers in decimal, DECIMAL without
// trailing fractional zeros (1.50 → "1.5"), TIMESTAMP in UTC
// ("2024-01-15 10:00:00.5+00:00"), DATE "2006-01-02" (a year BC as
// PostgreSQL writes it: "4713-01-01 BC", cdc.FormatBC; the infinities of
// both "infinity" and "-infinity"; DECIMAL's "NaN", "Infinity"), FLOAT
// and DOUBLE's -0 as "0" (SQLite cannot store it), BOOLEAN "true"/"false", BINARY "0x…" in lower-case hex, text as is. A row's text
// is each column's text encoded as "N" for NULL or "V<length>:<text>"
// (length in characters), concatenated: the encoding is injective, so two
// rows get one text only when every column is rowcmp-equal (and NULL never
// equals the empty string). Hash64 is the first 8 bytes of the text's MD5,
// big-endian, as a signed 64-bit integer — in PostgreSQL
// ('x' || substr(md5(text), 1, 16))::bit(64)::bigint.
//
// PostgreSQL computes the canonical text in SQL (PGCanon); SQLite, whose
// DECIMAL and TIMESTAMP values are text in the storage conventions of
// docs/architecture.md, calls the Go functions of Functions, which use
// rowcmp directly. The two agree for every type but FLOAT/DOUBLE (whose
// shortest texts PostgreSQL and Go may write differently) and the
// text-carried JSON and NATIVE types (whose texts depend on the writer):
// for those a value may hash differently on the two backends, which costs
// a diff a fetch of the rows, never a wrong answer, as long as they are not
// keys (KeyComparable).
package rowhash

import (
	"crypto/md5"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/rowcmp"
)

// CanonType is the type values of t are canonicalized as: t itself,
// except that a DECIMAL loses its precision and scale (values compare by
// number, never rounded to a column's scale).
func CanonType(t cdc.Type) cdc.Type {
	if t.Kind == cdc.KindDecimal {
		return cdc.Type{Kind: cdc.KindDecimal}
	}
	return t
}

// Text returns the canonical text of v as type t, ok false for NULL. A
// value rowcmp cannot convert to t is rendered with cdc.FormatValue (it
// then equals only the same text).
func Text(v any, t cdc.Type) (s string, ok bool) {
	c, err := rowcmp.Canon(v, CanonType(t))
	if err != nil {
		return "!" + cdc.FormatValue(v, t), true
	}
	if c == rowcmp.Null {
		return "", false
	}
	return c[1:], true
}

// AppendEncoded appends one column's encoding to b: "N" for NULL (ok
// false), else "V<characters>:<text>".
func AppendEncoded(b []byte, s string, ok bool) []byte {
	if !ok {
		return append(b, 'N')
	}
	b = append(b, 'V')
	b = strconv.AppendInt(b, int64(utf8.RuneCountInString(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// Hash64 returns the first 8 bytes of md5(text), big-endian, as int64.
func Hash64(text []byte) int64 {
	sum := md5.Sum(text)
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// HashValues returns Hash64 of the row text of vals, each of the type at
// the same position of types.
func HashValues(vals []any, types []cdc.Type) int64 {
	var b []byte
	for i, v := range vals {
		s, ok := Text(v, types[i])
		b = AppendEncoded(b, s, ok)
	}
	return Hash64(b)
}

// Bucket returns the bucket of a key hash: its top bits bits (0 < bits < 32).
func Bucket(h int64, bits int) uint32 {
	return uint32((h >> (64 - bits)) & (1<<bits - 1))
}

// KeyComparable reports whether a key column of type t hashes the same on
// SQLite and PostgreSQL (see the package doc); a diff across the two
// refuses other key types.
func KeyComparable(t cdc.Type) bool {
	switch {
	case t.Kind == cdc.KindFloat, t.Kind == cdc.KindDouble, t.Kind == cdc.KindJSON, t.Kind == cdc.KindNative:
		return false
	}
	return true
}

// Class names the values a column of type t compares with: two columns of
// one class hold comparable values in one database (integers, DECIMAL,
// text, TIMESTAMP with zone, TIMESTAMP without zone, …).
func Class(t cdc.Type) string {
	switch {
	case t.Kind.IsInteger():
		return "integer"
	case t.Kind.IsPlainText():
		return "text"
	case t.Kind == cdc.KindTimestamp && isNTZ(t):
		return "timestamp_ntz"
	case t.Kind == cdc.KindNative:
		return "native " + t.Native
	}
	return t.Kind.String()
}

func isNTZ(t cdc.Type) bool {
	return t.Native == cdc.TimestampNTZ || strings.HasPrefix(t.Native, "timestamp without")
}

// --- PostgreSQL ---

// PGNative returns x cast to the PostgreSQL type that PGNativeHash hashes
// values of type t as: bigint for integers, numeric for DECIMAL (whose
// hash ignores trailing zeros: 1.50 and 1.5 hash alike), text (COLLATE
// "C": byte for byte), timestamptz
// (hashed by instant), jsonb for JSON, text for native types.
func PGNative(x string, t cdc.Type) string {
	switch {
	case t.Kind.IsInteger():
		return "(" + x + ")::bigint"
	case t.Kind == cdc.KindDecimal:
		return "(" + x + ")::numeric"
	case t.Kind.IsPlainText(), t.Kind == cdc.KindUUID, t.Kind == cdc.KindNative:
		return "(" + x + ")::text COLLATE \"C\""
	case t.Kind == cdc.KindJSON:
		return "(" + x + ")::jsonb"
	case t.Kind == cdc.KindTimestamp && isNTZ(t):
		return "(" + x + ")::timestamp"
	case t.Kind == cdc.KindTimestamp:
		return "(" + x + ")::timestamptz"
	case t.Kind == cdc.KindDate:
		return "(" + x + ")::date"
	case t.Kind == cdc.KindBoolean:
		return "(" + x + ")::boolean"
	case t.Kind == cdc.KindFloat, t.Kind == cdc.KindDouble:
		return "(" + x + ")::float8"
	case t.Kind == cdc.KindBinary:
		return "(" + x + ")::bytea"
	}
	return "(" + x + ")::text"
}

// PGNativeHash returns SQL hashing the PGNative expressions xs with
// PostgreSQL's own hash functions (hash_record_extended, PostgreSQL 14+):
// about five times faster than PGHash, and equal for values PostgreSQL
// calls equal (numeric by number, timestamptz by instant; text byte for
// byte under a deterministic collation), but not reproducible outside
// PostgreSQL: both sides of a diff must be PostgreSQL.
func PGNativeHash(xs []string) string {
	return "hash_record_extended(ROW(" + strings.Join(xs, ", ") + "), 0)"
}

// PGCanon returns SQL computing the canonical text of x, a PostgreSQL
// expression of type t (NULL for NULL), in a session whose DateStyle is
// ISO (PGDateStyle): a date is its own text there ("4713-01-01 BC",
// "5874897-12-31": to_char would convert it to a timestamp, whose range
// ends in 294276), a timestamp before 1 AD ends in " BC" (cdc.FormatBC).
func PGCanon(x string, t cdc.Type) string {
	switch {
	case t.Kind.IsInteger():
		return "(" + x + ")::text"
	case t.Kind == cdc.KindBoolean:
		return "CASE (" + x + ")::boolean WHEN true THEN 'true' WHEN false THEN 'false' END"
	case t.Kind == cdc.KindDecimal:
		return "trim_scale((" + x + ")::numeric)::text"
	case t.Kind == cdc.KindDate:
		return "((" + x + ")::date)::text"
	case t.Kind == cdc.KindTimestamp:
		at := "(" + x + ") AT TIME ZONE 'UTC'"
		if t.Native == cdc.TimestampNTZ || strings.HasPrefix(t.Native, "timestamp without") {
			at = "(" + x + ")"
		}
		return pgFinite(x, "rtrim(rtrim(to_char("+at+", 'YYYY-MM-DD HH24:MI:SS.US'), '0'), '.') || '+00:00'"+
			" || CASE WHEN "+at+" < '0001-01-01 00:00:00'::timestamp THEN ' BC' ELSE '' END")
	case t.Kind == cdc.KindBinary:
		return "'0x' || encode(" + x + ", 'hex')"
	case t.Kind == cdc.KindFloat, t.Kind == cdc.KindDouble:
		// -0 is 0, as rowcmp.Canon renders it (and = compares it).
		return "CASE WHEN (" + x + ") = 0 THEN '0' ELSE (" + x + ")::text END"
	case t.Kind == cdc.KindJSON:
		// jsonb's text, as rowcmp.Canon renders JSON (JSONBText)
		return "(" + x + ")::jsonb::text"
	case t.Kind == cdc.KindNative && t.Native == "inet":
		// inet's output text, as sluice reads it (sinks/postgres
		// Column.Select): its cast to text adds the netmask of a host
		// address ('::1/128' for '::1'), which a SQLite copy does not hold.
		return "abbrev(" + x + ")"
	}
	return "(" + x + ")::text"
}

// PGDateStyle is the DateStyle PGCanon's SQL needs: a session computing
// canonical texts runs SET LOCAL DateStyle TO this first.
const PGDateStyle = "ISO, YMD"

// pgFinite returns SQL choosing canon, the canonical text of the date or
// timestamp x, when x is finite, and else x's own text: to_char gives
// NULL for infinity and -infinity, whose canonical texts are "infinity"
// and "-infinity" (cdc.Special, as rowcmp.Canon renders them). NULL stays
// NULL.
func pgFinite(x, canon string) string {
	return "CASE WHEN isfinite(" + x + ") THEN " + canon + " ELSE (" + x + ")::text END"
}

// PGHash returns SQL computing Hash64 of the row text of the canonical
// texts cs (PGCanon results), as bigint.
func PGHash(cs []string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = "coalesce('V' || length(" + c + ") || ':' || " + c + ", 'N')"
	}
	return "('x' || substr(md5(" + strings.Join(parts, " || ") + "), 1, 16))::bit(64)::bigint"
}

// --- SQLite ---

// SQLite function names (registered by sources/sqlite from Functions).
const (
	// FuncHash is sluice_diff_hash(types, v1, …, vn): Hash64 of the row
	// text of the stored values v1…vn, types being TypesArg of their types.
	FuncHash = "sluice_diff_hash"
	// FuncCanon is sluice_diff_canon(types, v): the canonical text of the
	// stored value v (NULL for NULL), types being TypesArg of its one type.
	FuncCanon = "sluice_diff_canon"
)

// Function is a SQLite scalar function: name, number of arguments (-1:
// any) and its body over driver values.
type Function struct {
	Name  string
	NArgs int
	Func  func(args []driver.Value) (driver.Value, error)
}

// FuncBuckets is the aggregate sluice_diff_buckets(bits, keys, types,
// v1, …, vn): over its rows, each row's bucket (the top bits bits of the
// hash of its first keys values) with the bucket's row count and the sums
// of the high and low 32 bits of its rows' hashes, as a BLOB that
// DecodeBuckets reads. One pass, no sort: the diff's first level on
// SQLite (NewBuckets is its Go side).
const FuncBuckets = "sluice_diff_buckets"

// Functions are the SQLite functions SQLiteHash and SQLiteCanon call.
var Functions = []Function{
	{Name: FuncHash, NArgs: -1, Func: sqlHash},
	{Name: FuncCanon, NArgs: 2, Func: sqlCanon},
}

// TypesArg renders types as the first argument of FuncHash and FuncCanon:
// a SQL string literal of their JSON.
func TypesArg(types []cdc.Type) string {
	b, _ := json.Marshal(types)
	return "'" + strings.ReplaceAll(string(b), "'", "''") + "'"
}

// TypesArgValue is the value of TypesArg (without SQL quoting).
func TypesArgValue(types []cdc.Type) string {
	b, _ := json.Marshal(types)
	return string(b)
}

// SQLiteHash returns SQL computing Hash64 of the row text of the SQLite
// expressions xs, of types types.
func SQLiteHash(xs []string, types []cdc.Type) string {
	return FuncHash + "(" + TypesArg(types) + ", " + strings.Join(xs, ", ") + ")"
}

// SQLiteCanon returns SQL computing the canonical text of the SQLite
// expression x of type t.
func SQLiteCanon(x string, t cdc.Type) string {
	if t.Kind.IsPlainText() {
		return "CAST(" + x + " AS TEXT)"
	}
	return FuncCanon + "(" + TypesArg([]cdc.Type{t}) + ", " + x + ")"
}

var typeCache sync.Map // types argument text → []cdc.Type

func parseTypes(v driver.Value) ([]cdc.Type, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s: the first argument must be the types' text", FuncHash)
	}
	if ts, ok := typeCache.Load(s); ok {
		return ts.([]cdc.Type), nil
	}
	var ts []cdc.Type
	if err := json.Unmarshal([]byte(s), &ts); err != nil {
		return nil, fmt.Errorf("%s: types %q: %w", FuncHash, s, err)
	}
	typeCache.Store(s, ts)
	return ts, nil
}

// storage converts a SQLite driver value to what rowcmp.Canon reads.
func storage(v driver.Value, t cdc.Type) any {
	switch x := v.(type) {
	case []byte:
		if t.Kind != cdc.KindBinary {
			return string(x)
		}
	case int64:
		if t.Kind == cdc.KindDecimal {
			return strconv.FormatInt(x, 10)
		}
	case float64:
		if t.Kind == cdc.KindDecimal {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
	}
	return v
}

func sqlHash(args []driver.Value) (driver.Value, error) {
	if len(args) < 2 {
		return nil, fmt.Errorf("%s: want the types and at least one value", FuncHash)
	}
	ts, err := parseTypes(args[0])
	if err != nil {
		return nil, err
	}
	if len(ts) != len(args)-1 {
		return nil, fmt.Errorf("%s: %d types for %d values", FuncHash, len(ts), len(args)-1)
	}
	b := make([]byte, 0, 64)
	for i, v := range args[1:] {
		b = appendStored(b, v, ts[i])
	}
	return Hash64(b), nil
}

// appendStored appends the encoding of a value SQLite stores (driver
// value v of type t) to b.
func appendStored(b []byte, v driver.Value, t cdc.Type) []byte {
	var s string
	ok := v != nil
	if ok {
		switch x := v.(type) {
		case int64:
			if t.Kind.IsInteger() {
				b = append(b, 'V')
				n := len(b)
				b = strconv.AppendInt(b, x, 10)
				digits := string(b[n:])
				b = b[:n]
				b = strconv.AppendInt(b, int64(len(digits)), 10)
				b = append(b, ':')
				return append(b, digits...)
			}
			s, ok = Text(storage(v, t), t)
		case string:
			s, ok = storedText(x, t)
		default:
			s, ok = Text(storage(v, t), t)
		}
	}
	return AppendEncoded(b, s, ok)
}

func sqlCanon(args []driver.Value) (driver.Value, error) {
	ts, err := parseTypes(args[0])
	if err != nil {
		return nil, err
	}
	if len(ts) != 1 {
		return nil, fmt.Errorf("%s: want one type", FuncCanon)
	}
	if args[1] == nil {
		return nil, nil
	}
	var s string
	var ok bool
	if x, isText := args[1].(string); isText {
		s, ok = storedText(x, ts[0])
	} else {
		s, ok = Text(storage(args[1], ts[0]), ts[0])
	}
	if !ok {
		return nil, nil
	}
	return s, nil
}

// storedText is Text for a value SQLite stores as text: plain text as is,
// and DECIMAL and TIMESTAMP in the forms sluice stores them (a plain
// decimal number; "2006-01-02 15:04:05[.f]+00:00") canonicalized without
// parsing, which is most of a diff's time on SQLite; anything else
// through Text.
func storedText(x string, t cdc.Type) (string, bool) {
	switch {
	case t.Kind.IsPlainText():
		return x, true
	case t.Kind == cdc.KindDecimal:
		if c, ok := plainDecimal(x); ok {
			return c, true
		}
	case t.Kind == cdc.KindTimestamp:
		if utcTimestamp(x) {
			return x, true
		}
	}
	return Text(x, t)
}

// plainDecimal returns the canonical text (decimal.Decimal.String) of a
// number written as -?digits[.digits], ok false for any other form.
func plainDecimal(x string) (string, bool) {
	neg := strings.HasPrefix(x, "-")
	d := x
	if neg {
		d = x[1:]
	}
	intPart, frac, hasDot := strings.Cut(d, ".")
	if intPart == "" || hasDot && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", false
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	frac = strings.TrimRight(frac, "0")
	c := intPart
	if frac != "" {
		c += "." + frac
	}
	if neg && c != "0" {
		c = "-" + c
	}
	return c, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// utcTimestamp reports whether x is already the canonical text of a
// TIMESTAMP: "YYYY-MM-DD HH:MM:SS+00:00" of a year 0001–9999 with an
// optional fraction of 1–9 digits not ending in 0 before the zone.
func utcTimestamp(x string) bool {
	if len(x) < 25 || !strings.HasSuffix(x, "+00:00") || strings.HasPrefix(x, "0000") {
		return false // year 0000 (1 BC) is written "0001-… BC"
	}
	for i := 0; i < 19; i++ {
		switch i {
		case 4, 7:
			if x[i] != '-' {
				return false
			}
		case 10:
			if x[i] != ' ' {
				return false
			}
		case 13, 16:
			if x[i] != ':' {
				return false
			}
		default:
			if x[i] < '0' || x[i] > '9' {
				return false
			}
		}
	}
	frac := x[19 : len(x)-6]
	if frac == "" {
		return true
	}
	return len(frac) >= 2 && len(frac) <= 10 && frac[0] == '.' && allDigits(frac[1:]) && frac[len(frac)-1] != '0'
}

// Buckets is the state of one FuncBuckets aggregate.
type Buckets struct {
	types []cdc.Type
	bits  int
	keys  int
	sums  map[uint32]*[3]int64
	buf   []byte
}

// NewBuckets returns an empty FuncBuckets state.
func NewBuckets() *Buckets { return &Buckets{sums: map[uint32]*[3]int64{}} }

// Step adds one row: args are bits, keys, the types' text (TypesArg) and
// the row's stored values. It retains none of them (SQLite may pass
// volatile strings).
func (a *Buckets) Step(args []driver.Value) error {
	if a.types == nil {
		if len(args) < 4 {
			return fmt.Errorf("%s: want bits, keys, types and values", FuncBuckets)
		}
		bits, ok1 := args[0].(int64)
		keys, ok2 := args[1].(int64)
		s, ok3 := args[2].(string)
		if !ok1 || !ok2 || !ok3 || bits < 1 || bits > 31 || keys < 1 {
			return fmt.Errorf("%s: bad bits, keys or types", FuncBuckets)
		}
		var ts []cdc.Type
		if err := json.Unmarshal([]byte(s), &ts); err != nil {
			return fmt.Errorf("%s: types: %w", FuncBuckets, err)
		}
		if len(ts) != len(args)-3 || int(keys) > len(ts) {
			return fmt.Errorf("%s: %d types for %d values", FuncBuckets, len(ts), len(args)-3)
		}
		a.types, a.bits, a.keys = ts, int(bits), int(keys)
	}
	vals := args[3:]
	b := a.buf[:0]
	for i := 0; i < a.keys; i++ {
		b = appendStored(b, vals[i], a.types[i])
	}
	bucket := Bucket(Hash64(b), a.bits)
	b = b[:0]
	for i, v := range vals {
		b = appendStored(b, v, a.types[i])
	}
	h := Hash64(b)
	a.buf = b
	acc := a.sums[bucket]
	if acc == nil {
		acc = new([3]int64)
		a.sums[bucket] = acc
	}
	acc[0]++
	acc[1] += (h >> 32) & 0xFFFFFFFF
	acc[2] += h & 0xFFFFFFFF
	return nil
}

// Final returns the buckets as a BLOB: per non-empty bucket, in bucket
// order, the bucket (4 bytes) and its count and two sums (8 bytes each),
// big-endian.
func (a *Buckets) Final() []byte {
	keys := make([]uint32, 0, len(a.sums))
	for k := range a.sums {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]byte, 0, 28*len(keys))
	for _, k := range keys {
		acc := a.sums[k]
		out = binary.BigEndian.AppendUint32(out, k)
		for _, v := range acc {
			out = binary.BigEndian.AppendUint64(out, uint64(v))
		}
	}
	return out
}

// DecodeBuckets calls fn for each bucket of a Final BLOB.
func DecodeBuckets(blob []byte, fn func(bucket uint32, count, sum1, sum2 int64) error) error {
	if len(blob)%28 != 0 {
		return fmt.Errorf("%s: a result of %d bytes", FuncBuckets, len(blob))
	}
	for i := 0; i < len(blob); i += 28 {
		r := blob[i:]
		if err := fn(binary.BigEndian.Uint32(r), int64(binary.BigEndian.Uint64(r[4:])), int64(binary.BigEndian.Uint64(r[12:])), int64(binary.BigEndian.Uint64(r[20:]))); err != nil {
			return err
		}
	}
	return nil
}

// SQLiteBuckets returns the FuncBuckets call over the SQLite expressions
// xs of types types, the first keys of them the key.
func SQLiteBuckets(bits, keys int, xs []string, types []cdc.Type) string {
	return fmt.Sprintf("%s(%d, %d, %s, %s)", FuncBuckets, bits, keys, TypesArg(types), strings.Join(xs, ", "))
}
