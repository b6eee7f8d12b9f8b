-- The seed's three changes.
INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active');
UPDATE orders SET amount = 1500.00 WHERE id = 1;
DELETE FROM orders WHERE id = 3;
