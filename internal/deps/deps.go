// Package deps pins the project's chosen modules in go.mod while packages
// that use them are written. It is imported by nothing.
package deps

import (
	_ "github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
	_ "github.com/goccy/go-yaml"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/robfig/cron/v3"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/shopspring/decimal"
	_ "github.com/xwb1989/sqlparser"
	_ "modernc.org/sqlite"
)
