package postgres

import (
	"context"
	"testing"
)

// TestSessionSettings: sluice's sessions run in UTC with temp_buffers
// raised for the TEMP tables of runs; a URL's own setting wins.
func TestSessionSettings(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	show := func(b *Backend, name string) string {
		var v string
		if err := b.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if tz, tb := show(b, "timezone"), show(b, "temp_buffers"); tz != "UTC" || tb != tempBuffers {
		t.Errorf("timezone %q, temp_buffers %q; want UTC and %s", tz, tb, tempBuffers)
	}
	own, err := Open(ctx, u+"&temp_buffers=16MB", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if tb := show(own, "temp_buffers"); tb != "16MB" {
		t.Errorf("URL's temp_buffers=16MB: got %q", tb)
	}
}
