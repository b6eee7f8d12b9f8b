create table if not exists `order` (
  `订单号` BIGINT NOT NULL COMMENT 'order number',
  region VARCHAR(8),
  amount decimal(38, 10) null,
  flag BOOLEAN, t TINYINT, s SMALLINT, f FLOAT, d DOUBLE, c CHAR(2), day DATE,
  ts TIMESTAMP, b BINARY, n NUMERIC, txt TEXT,
  PRIMARY KEY (region, `订单号`)
) COMMENT = 'orders; with a semicolon';
CREATE TABLE stream (id INT PRIMARY KEY);
alter table `order` set tblproperties ('CHANGE_TRACKING' = 'FALSE');
CREATE OR REPLACE TABLE STREAM s ON TABLE `order` COMMENT = 'it''s mine' WITH PROPERTIES ('TABLE_STREAM_MODE' = 'append_only', 'SHOW_INITIAL_ROWS' = 'TRUE');
create table stream if not exists s2 on table stream;
drop table stream s2; drop table stream; describe table stream s; desc stream s;
show table streams;
SELECT `订单号`, 区域 FROM `order` WHERE amount > 1.5 /* ; not a separator */;
(SELECT id FROM a) UNION (SELECT id FROM b);
