package serve

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"

	"github.com/sluicedata/sluice/internal/redact"
)

// PGListener is the one LISTEN session of a serve process on one
// PostgreSQL database, shared by every continuous job that reads a stream
// there (issue #19). PostgreSQL signals every session that listens in a
// database on each NOTIFY, so one listener per job made each application
// commit pay for every job (2 ms with 100 listeners, 127 ms with 1,000);
// with one session per database and process the cost no longer grows with
// the number of jobs.
//
// Notifications are received by github.com/jackc/pgxlisten, which owns the
// connection and reconnects after losing it. pgxlisten takes its channels
// before it starts, so a change to the set of channels (a job added or
// removed) restarts it on a new connection after a short settling delay;
// every (re)connection wakes every subscriber, since notifications may
// have been missed in between.
type PGListener struct {
	url      string
	register func(ctx context.Context, conn *pgx.Conn, channels []string) error
	log      *slog.Logger
	settle   time.Duration

	mu      sync.Mutex
	subs    map[string]map[*pgSub]struct{} // channel → subscribers
	state   map[string]*chanState          // channel → what was heard on it
	gen     uint64                         // LISTENs so far, on any connection
	changed chan struct{}                  // one pending value: the channel set changed
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewPGListener returns the listener of the database at url and starts its
// loop, which runs until Close (or ctx ends). register, when not nil, runs
// once on each new connection with every channel before the LISTENs (e.g.
// postgres.RegisterListeners, without which sluice's capture triggers do
// not notify; one call for all channels, so a reconnection costs a few
// statements, not a few per channel). It does not connect until the first Subscribe; connection
// errors are logged (redacted) and retried every second, never returned.
func NewPGListener(ctx context.Context, url string, register func(context.Context, *pgx.Conn, []string) error, log *slog.Logger) *PGListener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &PGListener{
		url: url, register: register, log: log, settle: 50 * time.Millisecond,
		subs: map[string]map[*pgSub]struct{}{}, state: map[string]*chanState{}, changed: make(chan struct{}, 1),
		cancel: cancel, done: make(chan struct{}),
	}
	go l.loop(lctx)
	return l
}

// Subscribe returns a Waker that receives a value after each NOTIFY on
// channel (an identifier, quoted as needed) and after each reconnection;
// its Close unsubscribes. It never blocks on the database.
func (l *PGListener) Subscribe(channel string) Waker {
	s := &pgSub{l: l, channel: channel, ch: make(chan struct{}, 1)}
	l.mu.Lock()
	set := l.subs[channel]
	if set == nil {
		set = map[*pgSub]struct{}{}
		l.subs[channel] = set
	}
	set[s] = struct{}{}
	isNew := len(set) == 1
	l.mu.Unlock()
	if isNew {
		l.signalChanged()
	}
	return s
}

// Channels returns the number of channels listened to (for tests and
// metrics).
func (l *PGListener) Channels() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs)
}

// Close stops listening and closes the connection. It returns nil.
func (l *PGListener) Close() error {
	l.cancel()
	<-l.done
	return nil
}

func (l *PGListener) signalChanged() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

func (l *PGListener) unsubscribe(s *pgSub) {
	l.mu.Lock()
	set := l.subs[s.channel]
	delete(set, s)
	gone := len(set) == 0
	if gone {
		delete(l.subs, s.channel)
	}
	l.mu.Unlock()
	if gone {
		l.signalChanged()
	}
}

// chanState is what the listener heard on one channel: gen is the LISTEN
// (numbered across the listener's connections) since which it has heard
// every notification, count the notifications since; live is false while
// no session of the listener is known to listen (before the first LISTEN,
// after a connection failed, while the channel set changes).
type chanState struct {
	gen, count uint64
	live       bool
}

// wakeChannel wakes the subscribers of channel. listened says that a
// LISTEN on channel just succeeded (a new position generation); else it
// is a notification (the position's count moves).
func (l *PGListener) wakeChannel(channel string, listened bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state[channel]
	if st == nil {
		st = &chanState{}
		l.state[channel] = st
	}
	if listened {
		l.gen++
		st.gen, st.count, st.live = l.gen, 0, true
	} else {
		st.count++
	}
	for s := range l.subs[channel] {
		s.wake()
	}
}

// deaf marks every channel as not listened to: notifications may go
// unheard until the next LISTEN.
func (l *PGListener) deaf() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.state {
		st.live = false
	}
}

func (l *PGListener) channels() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.subs))
	for c := range l.subs {
		out = append(out, c)
	}
	return out
}

// loop runs one pgxlisten.Listener per channel set until ctx ends.
func (l *PGListener) loop(ctx context.Context) {
	defer close(l.done)
	for {
		// Let a burst of subscriptions (serve starting 500 jobs) settle into
		// one channel set.
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.settle):
		}
		select {
		case <-l.changed:
		default:
		}
		channels := l.channels()
		if len(channels) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-l.changed:
				continue
			}
		}
		lctx, stop := context.WithCancel(ctx)
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			_ = l.listener(channels).Listen(lctx) // returns only when lctx ends
		}()
		select {
		case <-ctx.Done():
		case <-l.changed:
		}
		l.deaf() // until the next connection's LISTENs
		stop()
		<-ended
	}
}

// listener builds the pgxlisten.Listener of one channel set.
func (l *PGListener) listener(channels []string) *pgxlisten.Listener {
	pl := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			conn, err := pgx.Connect(ctx, l.url)
			if err != nil {
				return nil, redact.Error(err, l.url)
			}
			if l.register != nil {
				if err := l.register(ctx, conn, channels); err != nil {
					_ = conn.Close(ctx)
					return nil, fmt.Errorf("register listener on %d channel(s): %w", len(channels), redact.Error(err, l.url))
				}
			}
			return conn, nil
		},
		LogError: func(ctx context.Context, err error) {
			// The connection failed (or a handler did, which ours never
			// do): notifications may be missed until the next LISTEN.
			l.deaf()
			if ctx.Err() == nil {
				l.log.Warn("LISTEN connection failed; reconnecting", "channels", len(channels), "err", err)
			}
		},
		ReconnectDelay: time.Second,
	}
	h := listenHandler{l}
	for _, c := range channels {
		pl.Handle(c, h)
	}
	return pl
}

// listenHandler wakes a channel's subscribers on each notification and,
// as a pgxlisten.BacklogHandler, once after each LISTEN (a reconnection
// may have missed notifications).
type listenHandler struct{ l *PGListener }

func (h listenHandler) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	h.l.wakeChannel(n.Channel, false)
	return nil
}

func (h listenHandler) HandleBacklog(_ context.Context, channel string, _ *pgx.Conn) error {
	h.l.wakeChannel(channel, true)
	return nil
}

// pgSub is one job's subscription to a PGListener channel.
type pgSub struct {
	l       *PGListener
	channel string
	ch      chan struct{}
	once    sync.Once
}

// C receives a value after a notification or a reconnection (coalesced:
// one pending value at most).
func (s *pgSub) C() <-chan struct{} { return s.ch }

func (s *pgSub) wake() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// Position implements Positioner: "<gen>.<count>", the LISTEN since which
// the listener has heard every notification on the channel and the number
// heard since. The capture trigger notifies on every statement that logs
// a change to the table while a session listens (postgres.NotifyChannel,
// RegisterListener), so an equal position at two times means nothing was
// logged in between. ok is false while no LISTEN is known to be in place
// (not yet, a lost connection, a change of the channel set). What does not
// notify — a stream created again, with SHOW_INITIAL_ROWS — is seen within
// Config.QuietMax.
func (s *pgSub) Position() (string, bool) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	st := s.l.state[s.channel]
	if st == nil || !st.live {
		return "", false
	}
	return strconv.FormatUint(st.gen, 10) + "." + strconv.FormatUint(st.count, 10), true
}

// Close unsubscribes; it returns nil.
func (s *pgSub) Close() error {
	s.once.Do(func() { s.l.unsubscribe(s) })
	return nil
}
