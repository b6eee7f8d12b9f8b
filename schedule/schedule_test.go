package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no tzdata for %s: %v", name, err)
	}
	return l
}

func TestParseKinds(t *testing.T) {
	cases := []struct {
		spec, tz string
		kind     Kind
		str      string
	}{
		{"", "", Manual, "manual"},
		{"  ", "UTC", Manual, "manual"},
		{"continuous", "", Continuous, "continuous"},
		{"Continuous", "", Continuous, "continuous"},
		{"*/5 * * * *", "", Cron, "*/5 * * * *"},
		{"0 */5 * * * *", "", Cron, "0 */5 * * * *"},
		{"@hourly", "", Cron, "@hourly"},
		{"@daily", "Europe/Berlin", Cron, "CRON_TZ=Europe/Berlin @daily"},
		{"CRON_TZ=Asia/Shanghai 0 9 * * mon-fri", "", Cron, "CRON_TZ=Asia/Shanghai 0 9 * * mon-fri"},
		{"TZ=UTC 0 9 * * *", "UTC", Cron, "CRON_TZ=UTC 0 9 * * *"},
		{"@every 30s", "", Every, "@every 30s"},
		{"@every 1h30m", "Asia/Shanghai", Every, "@every 1h30m0s"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec, c.tz)
		if err != nil {
			t.Errorf("Parse(%q, %q): %v", c.spec, c.tz, err)
			continue
		}
		if s.Kind() != c.kind || s.String() != c.str {
			t.Errorf("Parse(%q, %q) = %v %q, want %v %q", c.spec, c.tz, s.Kind(), s.String(), c.kind, c.str)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		spec, tz string
		want     error
		msg      string
	}{
		{"61 * * * *", "", ErrBadSpec, "above maximum"},
		{"* * *", "", ErrBadSpec, "5 cron fields"},
		{"@fortnightly", "", ErrBadSpec, "unrecognized descriptor"},
		{"every 5m", "", ErrBadSpec, ""},
		{"CRON_TZ=Mars/Base 0 * * * *", "", ErrBadTimezone, "Mars/Base"},
		{"CRON_TZ=Asia/Shanghai", "", ErrBadSpec, "nothing follows"},
		{"0 * * * *", "Nowhere/Town", ErrBadTimezone, "Nowhere/Town"},
		{"CRON_TZ=Asia/Shanghai 0 * * * *", "Europe/Berlin", ErrBadTimezone, "keep one"},
		{"@every 500ms", "", ErrBadInterval, "at least 1s"},
		{"@every 0s", "", ErrBadInterval, "at least 1s"},
		{"@every -1m", "", ErrBadInterval, "at least 1s"},
		{"@every 1.5s", "", ErrBadInterval, "whole number"},
		{"@every soon", "", ErrBadInterval, "duration"},
		{"@every", "", ErrBadInterval, "needs a duration"},
		{"0 0 30 2 *", "", ErrNeverFires, "no date"},
	}
	for _, c := range cases {
		_, err := Parse(c.spec, c.tz)
		if !errors.Is(err, c.want) {
			t.Errorf("Parse(%q, %q) = %v, want %v", c.spec, c.tz, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Parse(%q, %q) = %q, want it to mention %q", c.spec, c.tz, err, c.msg)
		}
	}
}

func TestNextManualContinuous(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []Schedule{{}, MustParse("continuous", "")} {
		if !s.Next(now).IsZero() || s.NextN(now, 3) != nil {
			t.Errorf("%v: has fire times", s)
		}
		if n, m := s.NextAfter(now, now); !n.IsZero() || m != 0 {
			t.Errorf("%v: NextAfter = %v %d", s, n, m)
		}
	}
}

func TestNextNZone(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	s := MustParse("0 9 * * mon-fri", "Asia/Shanghai")
	// Friday 2026-01-09 10:00 Shanghai = 02:00 UTC.
	after := time.Date(2026, 1, 9, 2, 0, 0, 0, time.UTC)
	got := s.NextN(after, 3)
	want := []time.Time{
		time.Date(2026, 1, 12, 9, 0, 0, 0, sh), // Monday
		time.Date(2026, 1, 13, 9, 0, 0, 0, sh),
		time.Date(2026, 1, 14, 9, 0, 0, 0, sh),
	}
	if len(got) != 3 {
		t.Fatalf("NextN = %v", got)
	}
	for i := range want {
		if !got[i].Equal(want[i]) || got[i].Location() != time.UTC {
			t.Errorf("fire %d = %v, want %v (in the caller's zone, UTC)", i, got[i], want[i].UTC())
		}
	}
}

// TestNoZoneUsesCallerZone: without CRON_TZ/timezone the expression is
// read in the zone of the time given.
func TestNoZoneUsesCallerZone(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	s := MustParse("0 3 * * *", "")
	got := s.Next(time.Date(2026, 6, 1, 12, 0, 0, 0, berlin))
	if want := time.Date(2026, 6, 2, 3, 0, 0, 0, berlin); !got.Equal(want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
}

func fires(s Schedule, from time.Time, n int, loc *time.Location) []string {
	var out []string
	for _, f := range s.NextN(from, n) {
		out = append(out, f.In(loc).Format("01-02 15:04 MST"))
	}
	return out
}

// TestDSTSpringForward documents robfig's behaviour when the wall time of
// a fire does not exist (America/New_York, 2026-03-08 02:00 → 03:00).
func TestDSTSpringForward(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	from := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	cases := []struct {
		spec string
		want []string
	}{
		// The 02:30 of March 8 does not exist: that day's fire is skipped.
		{"30 2 * * *", []string{"03-09 02:30 EDT", "03-10 02:30 EDT"}},
		// Fires in the gap are dropped; the others keep their wall time.
		{"*/30 1-3 * * *", []string{"03-08 01:00 EST", "03-08 01:30 EST", "03-08 03:00 EDT", "03-08 03:30 EDT", "03-09 01:00 EDT"}},
		// Outside the gap nothing changes; the day is 23 hours long.
		{"@daily", []string{"03-08 00:00 EST", "03-09 00:00 EDT"}},
		{"0 4 * * *", []string{"03-08 04:00 EDT", "03-09 04:00 EDT"}},
	}
	for _, c := range cases {
		s := MustParse(c.spec, "America/New_York")
		got := fires(s, from, len(c.want), ny)
		if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%s: fires %v, want %v", c.spec, got, c.want)
		}
	}
	// Hourly fires are one real hour apart except across the gap, where
	// 01:00 EST → 03:00 EDT is also one real hour.
	s := MustParse("0 * * * *", "America/New_York")
	prev := s.Next(time.Date(2026, 3, 8, 0, 30, 0, 0, ny))
	for range 4 {
		next := s.Next(prev)
		if d := next.Sub(prev); d != time.Hour {
			t.Errorf("hourly %v → %v: %v apart", prev, next, d)
		}
		prev = next
	}
}

// TestDSTFallBack documents robfig's behaviour when a wall time repeats
// (America/New_York, 2026-11-01 02:00 EDT → 01:00 EST).
func TestDSTFallBack(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	from := time.Date(2026, 10, 31, 12, 0, 0, 0, ny)
	cases := []struct {
		spec string
		want []string
	}{
		// 01:30 happens twice and the job fires at both.
		{"30 1 * * *", []string{"11-01 01:30 EDT", "11-01 01:30 EST", "11-02 01:30 EST"}},
		{"*/30 1-2 * * *", []string{"11-01 01:00 EDT", "11-01 01:30 EDT", "11-01 01:00 EST", "11-01 01:30 EST", "11-01 02:00 EST"}},
		// Not in the repeated hour: once a day, the day is 25 hours long.
		{"0 2 * * *", []string{"11-01 02:00 EST", "11-02 02:00 EST"}},
		{"@daily", []string{"11-01 00:00 EDT", "11-02 00:00 EST"}},
	}
	for _, c := range cases {
		s := MustParse("CRON_TZ=America/New_York "+c.spec, "")
		got := fires(s, from, len(c.want), ny)
		if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%s: fires %v, want %v", c.spec, got, c.want)
		}
	}
}

// TestDSTBerlinDaily: a daily job in Europe/Berlin keeps its wall time
// across both changes of 2026 (29 March, 25 October).
func TestDSTBerlinDaily(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	s := MustParse("15 6 * * *", "Europe/Berlin")
	for _, day := range []int{28, 29, 30} {
		got := s.Next(time.Date(2026, 3, day-1, 7, 0, 0, 0, berlin))
		if want := time.Date(2026, 3, day, 6, 15, 0, 0, berlin); !got.Equal(want) {
			t.Errorf("March %d: %v, want %v", day, got, want)
		}
	}
	a := s.Next(time.Date(2026, 10, 23, 7, 0, 0, 0, berlin))
	b := s.Next(a)
	if b.Sub(a) != 25*time.Hour {
		t.Errorf("across fall-back %v → %v is %v, want 25h", a, b, b.Sub(a))
	}
}

// TestEveryGrid: @every fires on one grid aligned to the clock, the
// multiples of the interval from midnight UTC, whatever instant Next is
// given: processes started at different times (or a process restarted)
// fire together. NextAfter from the previous fire stays on it however late
// the wake-up, and skips fires missed during a suspension.
func TestEveryGrid(t *testing.T) {
	midnight := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		spec, zone string
		after      time.Time
		want       time.Time
	}{
		// Expected values are counted from midnight UTC by hand.
		{"@every 10s", "", midnight.Add(3*time.Second + 700*time.Millisecond), midnight.Add(10 * time.Second)},
		{"@every 10s", "", midnight.Add(10 * time.Second), midnight.Add(20 * time.Second)}, // strictly after
		{"@every 30s", "", midnight.Add(-time.Nanosecond), midnight},
		{"@every 1h30m", "Asia/Shanghai", midnight.Add(2 * time.Hour), midnight.Add(3 * time.Hour)},
		{"@every 5m", "", midnight.Add(17*time.Hour + 4*time.Minute + 59*time.Second), midnight.Add(17*time.Hour + 5*time.Minute)},
	} {
		s := MustParse(c.spec, c.zone)
		if got := s.Next(c.after); !got.Equal(c.want) {
			t.Errorf("%s: Next(%v) = %v, want %v", c.spec, c.after, got, c.want)
		}
	}

	// Two processes that start 4.3s apart fire at the same instants.
	s := MustParse("@every 30s", "")
	a, b := s.Next(midnight.Add(2*time.Second)), s.Next(midnight.Add(6300*time.Millisecond))
	if !a.Equal(b) {
		t.Errorf("processes started 4.3s apart: first fires %v and %v", a, b)
	}

	// Late wake-ups stay on the grid.
	prev := midnight
	for i := 1; i <= 10; i++ {
		next, missed := s.NextAfter(prev, prev.Add(1700*time.Millisecond)) // woke late
		if missed != 0 {
			t.Fatalf("tick %d: missed %d", i, missed)
		}
		if want := midnight.Add(time.Duration(i) * 30 * time.Second); !next.Equal(want) {
			t.Fatalf("tick %d: next %v, want %v", i, next, want)
		}
		prev = next
	}

	// A process suspended for 100s skips the missed grid points and stays
	// on the grid.
	next, missed := s.NextAfter(midnight, midnight.Add(100*time.Second))
	if want := midnight.Add(120 * time.Second); !next.Equal(want) || missed != 3 {
		t.Errorf("after suspension: next %v missed %d, want %v and 3", next, missed, want)
	}
}

func TestNextAfterCron(t *testing.T) {
	s := MustParse("*/10 * * * *", "UTC")
	prev := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next, missed := s.NextAfter(prev, prev.Add(35*time.Minute))
	if want := prev.Add(40 * time.Minute); !next.Equal(want) || missed != 3 {
		t.Errorf("NextAfter = %v, %d; want %v, 3", next, missed, want)
	}
	next, missed = s.NextAfter(prev, prev.Add(time.Second))
	if want := prev.Add(10 * time.Minute); !next.Equal(want) || missed != 0 {
		t.Errorf("NextAfter = %v, %d; want %v, 0", next, missed, want)
	}
}
