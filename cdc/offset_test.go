package cdc

import (
	"errors"
	"testing"
)

func TestOffsetEncode(t *testing.T) {
	tests := []struct {
		name string
		o    Offset
		want string
	}{
		{"zero", Offset{}, `{}`},
		{"empty map", Offset{Positions: map[string]string{}}, `{}`},
		{"single", SingleOffset("42"), `{"positions":{"":"42"}}`},
		{"shards sorted", Offset{Positions: map[string]string{"shard-2": "b", "shard-1": "a"}}, `{"positions":{"shard-1":"a","shard-2":"b"}}`},
		{"json in a position", SingleOffset(`{"seq":"0:1:0"}`), `{"positions":{"":"{\"seq\":\"0:1:0\"}"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.o.Encode()
			if got != tt.want {
				t.Errorf("Encode() = %s, want %s", got, tt.want)
			}
			back, err := DecodeOffset(got)
			if err != nil {
				t.Fatalf("DecodeOffset(%s): %v", got, err)
			}
			if !back.Equal(tt.o) {
				t.Errorf("DecodeOffset(Encode(o)) = %v, want %v", back.Positions, tt.o.Positions)
			}
		})
	}
}

func TestOffsetRoundTrip(t *testing.T) {
	for _, o := range []Offset{
		{},
		SingleOffset(""),
		SingleOffset("initial@3"),
		SingleOffset("héllo \"quoted\" \\ \n\t\x00 世界"),
		{Positions: map[string]string{"": "1", "a": "2"}},
		{Positions: map[string]string{"shard-0001": `{"it":"x","seq":"0:1:0","v":3}`, "shard-0002": `{"done":true}`}},
	} {
		got, err := DecodeOffset(o.Encode())
		if err != nil {
			t.Errorf("DecodeOffset(%s): %v", o.Encode(), err)
			continue
		}
		if !got.Equal(o) {
			t.Errorf("round trip of %q gave %q", o.Positions, got.Positions)
		}
	}
}

func TestDecodeOffset(t *testing.T) {
	tests := []struct {
		in   string
		want Offset
	}{
		{"", Offset{}},
		{"{}", Offset{}},
		{"null", Offset{}},
		{`{"positions":{}}`, Offset{}},
		{`{"positions":{"":"7"}}`, SingleOffset("7")},
		{` {"positions": {"s1": "x", "s2": "y"}} `, Offset{Positions: map[string]string{"s1": "x", "s2": "y"}}},
	}
	for _, tt := range tests {
		got, err := DecodeOffset(tt.in)
		if err != nil {
			t.Errorf("DecodeOffset(%q): %v", tt.in, err)
			continue
		}
		if !got.Equal(tt.want) {
			t.Errorf("DecodeOffset(%q) = %q, want %q", tt.in, got.Positions, tt.want.Positions)
		}
	}
	for _, in := range []string{"7", "not json", `{"positions":{"":7}}`, `{"positions":["a"]}`, `[]`, `{"positions":`, `"x"`} {
		got, err := DecodeOffset(in)
		if !errors.Is(err, ErrBadOffset) {
			t.Errorf("DecodeOffset(%q) = %q, %v; want an error wrapping ErrBadOffset", in, got.Positions, err)
		}
		if !got.IsZero() {
			t.Errorf("DecodeOffset(%q) returned %q with its error, want the zero Offset", in, got.Positions)
		}
	}
}

func TestOffsetWith(t *testing.T) {
	var zero Offset
	one := zero.With("", "5")
	if !zero.IsZero() {
		t.Errorf("With changed the zero offset: %q", zero.Positions)
	}
	if p, ok := one.Get(""); !ok || p != "5" {
		t.Errorf("zero.With(\"\", 5).Get(\"\") = %q, %v", p, ok)
	}

	a := Offset{Positions: map[string]string{"s1": "1", "s2": "2"}}
	b := a.With("s2", "20").With("s3", "30")
	if got := a.String(); got != "s1=1, s2=2" {
		t.Errorf("With modified its receiver: %s", got)
	}
	if got := b.String(); got != "s1=1, s2=20, s3=30" {
		t.Errorf("a.With(s2, 20).With(s3, 30) = %s, want s1=1, s2=20, s3=30", got)
	}
	if _, ok := a.Get("s3"); ok {
		t.Error("a has s3 after a.With(s3, …)")
	}
}

func TestOffsetEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b Offset
		want bool
	}{
		{"zero and zero", Offset{}, Offset{}, true},
		{"zero and empty map", Offset{}, Offset{Positions: map[string]string{}}, true},
		{"same single", SingleOffset("3"), SingleOffset("3"), true},
		{"different single", SingleOffset("3"), SingleOffset("4"), false},
		{"zero and single empty position", Offset{}, SingleOffset(""), false},
		{"same shards", Offset{Positions: map[string]string{"a": "1", "b": "2"}}, Offset{Positions: map[string]string{"b": "2", "a": "1"}}, true},
		{"missing shard", Offset{Positions: map[string]string{"a": "1", "b": "2"}}, Offset{Positions: map[string]string{"a": "1"}}, false},
		{"other shard name", Offset{Positions: map[string]string{"a": "1"}}, Offset{Positions: map[string]string{"b": "1"}}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%s: Equal = %v, want %v", tt.name, got, tt.want)
		}
		if got := tt.b.Equal(tt.a); got != tt.want {
			t.Errorf("%s: Equal (swapped) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOffsetString(t *testing.T) {
	tests := []struct {
		o    Offset
		want string
	}{
		{Offset{}, "(start)"},
		{Offset{Positions: map[string]string{}}, "(start)"},
		{SingleOffset("6"), "6"},
		{SingleOffset("initial@3"), "initial@3"},
		{Offset{Positions: map[string]string{"shard-2": "b", "shard-10": "c", "shard-1": "a"}}, "shard-1=a, shard-10=c, shard-2=b"},
		{Offset{Positions: map[string]string{"": "1", "x": "2"}}, "=1, x=2"},
		{Offset{Positions: map[string]string{"only": "9"}}, "only=9"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("%q.String() = %q, want %q", tt.o.Positions, got, tt.want)
		}
	}
}

func TestOffsetGetIsZero(t *testing.T) {
	o := Offset{Positions: map[string]string{"a": ""}}
	if o.IsZero() {
		t.Error("an offset with one (empty) position is not zero")
	}
	if p, ok := o.Get("a"); !ok || p != "" {
		t.Errorf("Get(a) = %q, %v; want \"\", true", p, ok)
	}
	if p, ok := o.Get("b"); ok || p != "" {
		t.Errorf("Get(b) = %q, %v; want \"\", false", p, ok)
	}
	if p, ok := (Offset{}).Get(""); ok || p != "" {
		t.Errorf("zero.Get(\"\") = %q, %v", p, ok)
	}
}
