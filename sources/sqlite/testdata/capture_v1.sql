-- A database whose change capture sluice installed before capture v2
-- (AFTER triggers naming every column): made by that version with
-- CREATE TABLE t, tracking, stream s consuming one insert, then UPDATE 1, DELETE 2.
BEGIN TRANSACTION;
CREATE TABLE sluice_tracking (
	tbl     TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
	log     TEXT NOT NULL,
	columns TEXT NOT NULL,
	enabled TEXT NOT NULL
);
INSERT INTO sluice_tracking VALUES('t','sluice_changes_t','["id","name"]','2026-12-01 15:49:36.049788+00:00');
CREATE TABLE sluice_streams (
	name              TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
	tbl               TEXT NOT NULL COLLATE NOCASE,
	mode              TEXT NOT NULL,
	show_initial_rows INTEGER NOT NULL,
	comment           TEXT NOT NULL DEFAULT '',
	created           TEXT NOT NULL,
	id                TEXT NOT NULL,
	"offset"          TEXT NOT NULL
);
INSERT INTO sluice_streams VALUES('s','t','STANDARD',0,'','2026-12-01 15:49:36.057294+00:00','cf498b1c9fb51f36fff7805ce513ae00','1');
CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO t VALUES(1,'a2');
INSERT INTO t VALUES(9,'z');
CREATE TABLE IF NOT EXISTS "sluice_changes_t" (seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL, ts TEXT NOT NULL, rid INTEGER, "o_id", "n_id", "o_name", "n_name");
INSERT INTO sluice_changes_t VALUES(2,'U','2026-12-01 15:49:36.063+00:00',1,1,1,'a','a2');
INSERT INTO sluice_changes_t VALUES(3,'D','2026-12-01 15:49:36.063+00:00',2,2,NULL,'b',NULL);
CREATE TRIGGER "sluice_capture_ins_t" AFTER INSERT ON "t" FOR EACH ROW BEGIN
	INSERT INTO "sluice_changes_t" (op, ts, rid, "n_id", "n_name") VALUES ('I', strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00', NEW.rowid, NEW."id", NEW."name");
END;
CREATE TRIGGER "sluice_capture_del_t" AFTER DELETE ON "t" FOR EACH ROW BEGIN
	INSERT INTO "sluice_changes_t" (op, ts, rid, "o_id", "o_name") VALUES ('D', strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00', OLD.rowid, OLD."id", OLD."name");
END;
CREATE TRIGGER "sluice_capture_upd_t" AFTER UPDATE ON "t" FOR EACH ROW BEGIN
	INSERT INTO "sluice_changes_t" (op, ts, rid, "o_id", "o_name", "n_id", "n_name") SELECT 'U', strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00', NEW.rowid, OLD."id", OLD."name", NEW."id", NEW."name" WHERE OLD."id" IS NEW."id";
	INSERT INTO "sluice_changes_t" (op, ts, rid, "o_id", "o_name") SELECT 'KD', strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00', OLD.rowid, OLD."id", OLD."name" WHERE NOT (OLD."id" IS NEW."id");
	INSERT INTO "sluice_changes_t" (op, ts, rid, "n_id", "n_name") SELECT 'KI', strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00', NEW.rowid, NEW."id", NEW."name" WHERE NOT (OLD."id" IS NEW."id");
END;
COMMIT;
