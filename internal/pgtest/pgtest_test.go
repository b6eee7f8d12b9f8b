package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewDatabase(t *testing.T) {
	u := NewDatabase(t)
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var db string
	if err := conn.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db == "postgres" {
		t.Fatalf("connected to the maintenance database, want a fresh one")
	}
}

// TestStartCluster exercises the initdb/pg_ctl path even when a server is
// already reachable. It is slow (a few seconds), so it runs only with
// SLUICE_TEST_INITDB=1 or when no other server was found.
func TestStartCluster(t *testing.T) {
	if os.Getenv("SLUICE_TEST_INITDB") == "" && testing.Short() {
		t.Skip("set SLUICE_TEST_INITDB=1 to start a throw-away cluster")
	}
	if _, err := binDir(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	c, err := startCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := ping(c.url); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); err != nil {
		t.Fatal(err)
	}
}
