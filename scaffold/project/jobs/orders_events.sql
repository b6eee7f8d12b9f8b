-- name: orders_events
-- schedule: @every 1m
-- Append every new order to orders_events with the time it was committed:
-- an insert log. Its stream is APPEND_ONLY: it returns every inserted row
-- (as INSERT), even one updated or deleted since.
INSERT INTO orders_events
SELECT id, customer, amount, `__commit_timestamp` AS committed_at
FROM orders_events_stream;
