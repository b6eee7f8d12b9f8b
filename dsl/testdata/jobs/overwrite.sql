/*
 * name: daily_snapshot
 * schedule: 0 2 * * *
 * timezone: Asia/Shanghai
 * sink-connection: postgres://app@db/warehouse?password=${PG_PASSWORD}
 */
INSERT OVERWRITE TABLE snapshot (order_id, customer, bucket)
SELECT id, upper(name) AS customer,
       CASE WHEN amount >= 1000 THEN 'large' ELSE 'small' END
FROM orders_stream;  -- every change of the stream
