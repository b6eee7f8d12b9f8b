module github.com/sluicedata/sluice

go 1.26.0

require (
	github.com/aliyun/aliyun-tablestore-go-sdk v1.8.0
	github.com/golang/protobuf v1.3.2
	github.com/shopspring/decimal v1.6.0
	github.com/xwb1989/sqlparser v0.0.0-20180606152119-120387863bf2
)
