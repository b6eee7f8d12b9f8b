-- name: 订单-merge
-- Merge straight from the stream; deletes delete.
MERGE INTO `order` o
USING orders_stream
ON o.region = orders_stream.region AND (orders_stream.`订单号` = o.`订单号`)
WHEN MATCHED AND orders_stream.`__change_type` = 'DELETE' THEN DELETE
WHEN MATCHED AND orders_stream.`__change_type` <> 'UPDATE_BEFORE' THEN
  UPDATE SET total = CASE WHEN orders_stream.amount IS NULL THEN 0 ELSE orders_stream.amount END
WHEN NOT MATCHED AND orders_stream.`__change_type` IN ('INSERT', 'UPDATE_AFTER') THEN
  INSERT (region, `订单号`, total) VALUES (orders_stream.region, orders_stream.`订单号`, COALESCE(orders_stream.amount, 0))
