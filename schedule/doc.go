// Package schedule parses and evaluates the schedule of a job file: the
// value of its `schedule:` key (YAML) or `-- schedule:` line (SQL), plus
// its optional `timezone:`.
//
// A schedule is one of
//
//   - "" — manual: the job runs only by `sluice run`; `sluice serve` never
//     fires it;
//   - "continuous" — `sluice serve` runs the job again as soon as a run
//     ends (see package serve for the idle backoff);
//   - a cron expression parsed by github.com/robfig/cron/v3 with five
//     fields (minute hour day-of-month month day-of-week) or six with a
//     leading seconds field, names (jan, mon) and ranges/steps;
//   - a descriptor: @yearly (@annually), @monthly, @weekly, @daily
//     (@midnight), @hourly, or "@every DURATION" (Go duration syntax,
//     whole seconds, at least 1s: "@every 30s", "@every 1h30m").
//
// A cron expression may start with "CRON_TZ=Zone " (or "TZ=Zone "); the
// job's timezone key does the same. Both may be given only if they name the
// same zone. Without either, the expression is evaluated in the zone of the
// time passed to Next — the server passes its local time, so that is the
// machine's zone (UTC in most containers).
//
// # Daylight saving time
//
// Cron expressions are matched against wall-clock time in their zone, as
// robfig/cron does, which has two consequences on the days the clocks
// change (tested in schedule_test.go with America/New_York):
//
//   - Spring forward (02:00 → 03:00): a fire whose wall time falls in the
//     skipped hour does not happen that day; it is not moved to 03:00.
//     "30 2 * * *" fires on 7 March 02:30 EST and next on 9 March 02:30
//     EDT, skipping 8 March. "*/30 1-3 * * *" fires 01:00, 01:30, 03:00,
//     03:30 on that day.
//   - Fall back (02:00 → 01:00): a fire whose wall time falls in the
//     repeated hour happens twice, once in each offset. "30 1 * * *" fires
//     at 01:30 EDT and again one hour later at 01:30 EST.
//
// Fires outside the transition hour (hourly, @daily at midnight, …) are
// unaffected. For sluice a repeated fire is harmless (a run consumes only
// what is pending) and a skipped one delays the changes by a day; schedule
// daily jobs outside 01:00–03:00 local time, or in UTC
// (timezone: UTC), to avoid both.
//
// # @every
//
// "@every D" fires at the instants that are whole multiples of D counted
// from Go's zero time (0001-01-01 00:00 UTC; time.Time.Truncate): for a D
// that divides a day — 10s, 5m, 1h30m — every D from midnight UTC, as cron
// would ("*/10 * * * * *"), whatever the time zone. Every process computes
// the same grid, so several `sluice serve` processes fire a job at the same
// instants and their locks let one of them run it, instead of each firing on
// a grid of its own start time (issue #19: with 3 processes, 54% of fires
// ran twice in a row). robfig/cron's own @every (next = t + D from whatever t
// it is given, its scheduler passing the time it woke) drifts and is not
// shared, so it is not used for @every. Package serve passes the previous
// scheduled fire (NextAfter), so fires stay on the grid however late the
// process wakes or however long a run takes; fires missed while the process
// was stopped or suspended are skipped, not replayed.
package schedule
