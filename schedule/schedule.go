package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kind is what sort of schedule a job has.
type Kind int

// The kinds of schedule.
const (
	// Manual jobs run only when asked (`sluice run`).
	Manual Kind = iota
	// Cron jobs fire at the instants a cron expression or calendar
	// descriptor (@daily, …) matches.
	Cron
	// Every jobs fire on a fixed grid of "@every" intervals.
	Every
	// Continuous jobs run again as soon as a run ends.
	Continuous
)

// String returns "manual", "cron", "every" or "continuous".
func (k Kind) String() string {
	switch k {
	case Manual:
		return "manual"
	case Cron:
		return "cron"
	case Every:
		return "every"
	case Continuous:
		return "continuous"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ContinuousSpec is the schedule text of a continuous job.
const ContinuousSpec = "continuous"

// parser accepts 5 fields, an optional leading seconds field, and
// descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// probe is the fixed instant from which Parse checks that a cron
// expression fires at all (robfig looks five years ahead; every valid
// calendar date recurs within that window from any start).
var probe = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Schedule is a parsed job schedule. The zero value is the manual schedule.
// Schedules are immutable values, safe for concurrent use.
type Schedule struct {
	kind     Kind
	spec     string // the expression without any CRON_TZ= prefix
	zone     string // IANA zone name, "" for the zone of the caller's times
	loc      *time.Location
	interval time.Duration
	cron     cron.Schedule
}

// Parse parses a job's schedule text spec and its timezone key tz (an IANA
// zone name such as "Europe/Berlin", or "" for none). Surrounding blanks
// are ignored; "continuous" is matched case-insensitively.
//
// It returns an error wrapping ErrBadSpec (not a schedule; the message
// quotes the text and robfig/cron's reason), ErrBadTimezone (unknown zone,
// or a CRON_TZ= prefix naming a different zone than tz), ErrBadInterval
// (@every below 1s or with a fraction of a second) or ErrNeverFires. The
// error has no file position: the caller adds plan.Job.SchedulePos.
func Parse(spec, tz string) (Schedule, error) {
	spec = strings.TrimSpace(spec)
	tz = strings.TrimSpace(tz)
	var loc *time.Location
	if tz != "" {
		l, err := loadZone(tz)
		if err != nil {
			return Schedule{}, err
		}
		loc = l
	}
	switch {
	case spec == "":
		return Schedule{kind: Manual, zone: tz, loc: loc}, nil
	case strings.EqualFold(spec, ContinuousSpec):
		return Schedule{kind: Continuous, spec: ContinuousSpec, zone: tz, loc: loc}, nil
	}

	if z, rest, ok := cutZonePrefix(spec); ok {
		l, err := loadZone(z)
		if err != nil {
			return Schedule{}, err
		}
		if tz != "" && l.String() != loc.String() {
			return Schedule{}, fmt.Errorf("%w: the schedule says CRON_TZ=%s but the job's timezone is %s; keep one", ErrBadTimezone, z, tz)
		}
		if rest == "" {
			return Schedule{}, fmt.Errorf("%w %q: nothing follows the time zone", ErrBadSpec, spec)
		}
		spec, tz, loc = rest, z, l
	}

	if rest, ok := strings.CutPrefix(spec, "@every"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		return parseEvery(spec, strings.TrimSpace(rest), tz, loc)
	}

	cs, err := parseCron(spec)
	if err != nil {
		return Schedule{}, err
	}
	if ss, ok := cs.(*cron.SpecSchedule); ok {
		ss.Location = time.Local // robfig: "the zone of the time given to Next"
		if loc != nil {
			ss.Location = loc
		}
	}
	s := Schedule{kind: Cron, spec: spec, zone: tz, loc: loc, cron: cs}
	if s.Next(probe).IsZero() {
		return Schedule{}, fmt.Errorf("%w: %q matches no date (check the day of month against the month)", ErrNeverFires, spec)
	}
	return s, nil
}

// MustParse is Parse for schedules known to be valid (tests, examples); it
// panics on an error.
func MustParse(spec, tz string) Schedule {
	s, err := Parse(spec, tz)
	if err != nil {
		panic(err)
	}
	return s
}

// parseCron runs robfig's parser, turning a panic on odd input into an
// error.
func parseCron(spec string) (cs cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			cs, err = nil, fmt.Errorf("%w %q: %v", ErrBadSpec, spec, r)
		}
	}()
	cs, err = parser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %s (want 5 cron fields \"min hour dom month dow\", 6 with seconds first, @hourly/@daily/@weekly/@monthly/@yearly, \"@every 30s\" or \"continuous\")", ErrBadSpec, spec, err)
	}
	return cs, nil
}

// parseEvery parses the duration of "@every DURATION".
func parseEvery(spec, dur, tz string, loc *time.Location) (Schedule, error) {
	if dur == "" {
		return Schedule{}, fmt.Errorf("%w %q: @every needs a duration, e.g. \"@every 30s\"", ErrBadInterval, spec)
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		return Schedule{}, fmt.Errorf("%w %q: %s (Go duration syntax: 30s, 5m, 1h30m)", ErrBadInterval, spec, strings.TrimPrefix(err.Error(), "time: "))
	}
	if d < time.Second {
		return Schedule{}, fmt.Errorf("%w %q: the interval must be at least 1s (use \"continuous\" to run back to back)", ErrBadInterval, spec)
	}
	if d%time.Second != 0 {
		return Schedule{}, fmt.Errorf("%w %q: the interval must be a whole number of seconds", ErrBadInterval, spec)
	}
	return Schedule{kind: Every, spec: "@every " + d.String(), zone: tz, loc: loc, interval: d}, nil
}

// cutZonePrefix splits "CRON_TZ=Zone rest" or "TZ=Zone rest".
func cutZonePrefix(spec string) (zone, rest string, ok bool) {
	var after string
	if a, found := strings.CutPrefix(spec, "CRON_TZ="); found {
		after = a
	} else if a, found := strings.CutPrefix(spec, "TZ="); found {
		after = a
	} else {
		return "", "", false
	}
	zone, rest, _ = strings.Cut(after, " ")
	return zone, strings.TrimSpace(rest), true
}

// loadZone loads an IANA zone with an error wrapping ErrBadTimezone.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty zone name", ErrBadTimezone)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w %q: not an IANA zone name such as \"UTC\" or \"Europe/Berlin\"", ErrBadTimezone, name)
	}
	return l, nil
}

// Kind reports the kind of schedule.
func (s Schedule) Kind() Kind { return s.kind }

// IsManual reports whether the schedule never fires by itself.
func (s Schedule) IsManual() bool { return s.kind == Manual }

// IsContinuous reports whether the job runs back to back.
func (s Schedule) IsContinuous() bool { return s.kind == Continuous }

// Timed reports whether Next yields fire times (cron and @every).
func (s Schedule) Timed() bool { return s.kind == Cron || s.kind == Every }

// Interval is the @every interval, 0 for other kinds.
func (s Schedule) Interval() time.Duration { return s.interval }

// Location is the zone the schedule is evaluated in, nil when it uses the
// zone of the times passed to Next.
func (s Schedule) Location() *time.Location { return s.loc }

// Spec is the expression without its time zone: "0 3 * * *",
// "@every 30s", "continuous", or "" for manual.
func (s Schedule) Spec() string { return s.spec }

// String is the canonical text of the schedule: Spec prefixed with
// "CRON_TZ=Zone " for a cron schedule with a zone, or "manual".
func (s Schedule) String() string {
	switch s.kind {
	case Manual:
		return "manual"
	case Cron:
		if s.zone != "" {
			return "CRON_TZ=" + s.zone + " " + s.spec
		}
	}
	return s.spec
}

// Next returns the first fire time strictly after after, in after's
// location, at whole-second precision. It returns the zero time for manual
// and continuous schedules, which have no fire times (and, in theory, for a
// cron expression with no match in the next five years, which Parse
// rejects).
//
// For @every it returns the first instant after after that is a whole
// multiple of the interval counted from Go's zero time (0001-01-01 00:00
// UTC): one grid for every process, aligned to the clock (package doc).
func (s Schedule) Next(after time.Time) time.Time {
	if !s.Timed() {
		return time.Time{}
	}
	if s.kind == Every {
		return after.Truncate(s.interval).Add(s.interval).In(after.Location())
	}
	return s.cron.Next(after)
}

// NextN returns the first n fire times after after (for `sluice validate
// --explain`), or nil for manual and continuous schedules.
func (s Schedule) NextN(after time.Time, n int) []time.Time {
	if !s.Timed() || n <= 0 {
		return nil
	}
	out := make([]time.Time, 0, n)
	t := after
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// NextAfter returns the first fire time of the grid that continues from
// prev (a previous scheduled fire) and lies strictly after now, and how
// many grid points in (prev, now] it skipped — fires missed because the
// process was late, suspended or busy. It is what a scheduler calls after a
// fire to stay drift-free: for @every the grid is prev + k·interval; for
// cron it is simply Next(now) with the missed count. It returns the zero
// time for schedules without fire times.
func (s Schedule) NextAfter(prev, now time.Time) (next time.Time, missed int) {
	if !s.Timed() {
		return time.Time{}, 0
	}
	next = s.Next(prev)
	if next.After(now) {
		return next, 0
	}
	if s.kind == Every {
		k := int(now.Sub(next)/s.interval) + 1
		return next.Add(time.Duration(k) * s.interval), k
	}
	for !next.IsZero() && !next.After(now) && missed < 1000 {
		missed++
		next = s.Next(next)
	}
	if !next.After(now) {
		next = s.Next(now)
	}
	return next, missed
}
