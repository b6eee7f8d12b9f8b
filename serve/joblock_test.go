package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestLockNamesHolder: with the job's lock held by store a, Lock on store
// b fails at once with a *RunningError naming this process's pid and host
// and a start time within the test's span; with wait it calls waiting once
// and returns the lock after a releases it; a cancelled wait returns ctx's
// error.
func TestLockNamesHolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (a, b Store)
	}{
		{"sqlite", func(t *testing.T) (Store, Store) {
			path := filepath.Join(t.TempDir(), "s.db")
			return openSQLite(t, path, "A", nil), openSQLite(t, path, "B", nil)
		}},
		{"postgres", func(t *testing.T) (Store, Store) {
			url := pgtest.NewDatabase(t)
			return openPG(t, url, "A"), openPG(t, url, "B")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			a, b := tc.open(t)
			before := time.Now().Add(-time.Second).Truncate(time.Second)
			unlock, err := Lock(ctx, a, "j", false, nil)
			if err != nil {
				t.Fatal(err)
			}
			host, _ := os.Hostname()
			t0 := time.Now()
			_, err = Lock(ctx, b, "j", false, nil)
			var re *RunningError
			if !errors.As(err, &re) || !errors.Is(err, ErrJobRunning) {
				t.Fatalf("Lock on a held job = %v, want a RunningError", err)
			}
			if took := time.Since(t0); took > time.Second {
				t.Errorf("the refusal took %v, want at once", took)
			}
			if !re.Known || re.Holder.PID != os.Getpid() || re.Holder.Host != host ||
				re.Holder.Since.Before(before) || re.Holder.Since.After(time.Now()) {
				t.Fatalf("holder = %+v, want pid %d on %s since ~%v", re, os.Getpid(), host, before)
			}
			want := "job j is running (pid " + strconv.Itoa(os.Getpid()) + " on " + host + " since " + re.Holder.Since.UTC().Format(time.RFC3339) + ")"
			if err.Error() != want {
				t.Errorf("message = %q, want %q", err.Error(), want)
			}

			// Another job is free.
			if u, err := Lock(ctx, b, "k", false, nil); err != nil {
				t.Fatal(err)
			} else {
				u()
			}

			// A cancelled wait returns ctx's error.
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = Lock(cctx, b, "j", true, nil)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("cancelled wait = %v", err)
			}

			// A wait ends when a releases.
			told := 0
			go func() { time.Sleep(700 * time.Millisecond); unlock() }()
			u, err := Lock(ctx, b, "j", true, func(*RunningError) { told++ })
			if err != nil {
				t.Fatal(err)
			}
			if told != 1 {
				t.Errorf("waiting was called %d times, want 1", told)
			}
			if _, ok, err := a.TryLock(ctx, "j"); ok || err != nil {
				t.Fatalf("a took the lock b waited for: %v, %v", ok, err)
			}
			u()
			if _, ok, err := b.(HolderLocker).Holder(ctx, "j"); ok || err != nil {
				t.Fatalf("a released lock still has a holder: %v, %v", ok, err)
			}
		})
	}
}
