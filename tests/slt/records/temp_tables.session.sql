DROP TABLE IF EXISTS t_tmp_perm, t_tmp_perm_ref
CREATE TABLE t_tmp_perm (a integer PRIMARY KEY, b text)
INSERT INTO t_tmp_perm VALUES (1, 'permanent'), (2, 'permanent two')
CREATE TEMP TABLE t_tmp_perm (a integer PRIMARY KEY, b text NOT NULL DEFAULT 'dflt', c integer CHECK (c > 0), UNIQUE (b))
SELECT * FROM t_tmp_perm
INSERT INTO t_tmp_perm (a, c) VALUES (1, 5)
INSERT INTO t_tmp_perm VALUES (2, 'two', 7), (3, 'three', NULL)
SELECT * FROM t_tmp_perm ORDER BY a
SELECT * FROM public.t_tmp_perm ORDER BY a
SELECT a, b FROM pg_temp.t_tmp_perm ORDER BY a
INSERT INTO t_tmp_perm VALUES (1, 'x', 1)
INSERT INTO t_tmp_perm (a, c) VALUES (4, 5)
INSERT INTO t_tmp_perm VALUES (5, 'five', 0)
INSERT INTO t_tmp_perm VALUES (NULL, 'six', 1)
UPDATE t_tmp_perm SET c = c + 1 WHERE a = 2 RETURNING a, c
DELETE FROM t_tmp_perm WHERE a = 3
SELECT count(*) FROM t_tmp_perm
CREATE INDEX ON t_tmp_perm (c)
CREATE INDEX t_tmp_perm_named ON t_tmp_perm (b, c)
SELECT a FROM t_tmp_perm WHERE c = 8
SELECT c.relname, c.relkind, c.relpersistence FROM pg_class c WHERE c.relname LIKE 't_tmp_perm%' ORDER BY 1, 3
SELECT n.nspname LIKE 'pg_temp_%' AS temp_schema, c.relpersistence FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 't_tmp_perm' ORDER BY 2
SELECT table_schema LIKE 'pg_temp%' AS temp_schema, table_name, table_type FROM information_schema.tables WHERE table_name = 't_tmp_perm' ORDER BY 3
SELECT schemaname LIKE 'pg_temp%' AS temp_schema, tablename FROM pg_tables WHERE tablename = 't_tmp_perm' ORDER BY 1
SELECT schemaname LIKE 'pg_temp%' AS temp_schema, indexname FROM pg_indexes WHERE tablename = 't_tmp_perm' ORDER BY 1, 2
SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = 't_tmp_perm' AND table_schema LIKE 'pg_temp%' ORDER BY ordinal_position
CREATE TEMP TABLE t_tmp_perm (x integer)
CREATE TEMP TABLE IF NOT EXISTS t_tmp_perm (x integer)
DROP TABLE t_tmp_perm
SELECT * FROM t_tmp_perm ORDER BY a
SELECT count(*) FROM pg_class WHERE relname = 't_tmp_perm'
SELECT * FROM pg_temp.t_tmp_perm
CREATE TEMPORARY TABLE t_tmp_as AS SELECT a, b FROM t_tmp_perm WHERE a = 2
SELECT * FROM t_tmp_as
SELECT relpersistence FROM pg_class WHERE relname = 't_tmp_as'
SELECT a * 10 AS a10 INTO TEMP t_tmp_into FROM t_tmp_perm
SELECT * FROM t_tmp_into ORDER BY 1
CREATE TABLE pg_temp.t_tmp_ns (a integer)
SELECT relpersistence FROM pg_class WHERE relname = 't_tmp_ns'
CREATE LOCAL TEMP TABLE t_tmp_local (a integer)
SELECT relpersistence FROM pg_class WHERE relname = 't_tmp_local'
CREATE TEMP TABLE public.t_tmp_bad (a integer)
CREATE TEMP TABLE pg_catalog.t_tmp_bad (a integer)
CREATE TABLE t_tmp_bad (a integer) ON COMMIT DELETE ROWS
CREATE TEMP TABLE t_tmp_fk (a integer REFERENCES t_tmp_perm (a))
CREATE TEMP TABLE t_tmp_parent (a integer PRIMARY KEY)
CREATE TABLE t_tmp_perm_ref (a integer REFERENCES t_tmp_parent (a))
CREATE TEMP TABLE t_tmp_child (a integer REFERENCES t_tmp_parent (a))
INSERT INTO t_tmp_parent VALUES (1)
INSERT INTO t_tmp_child VALUES (1)
INSERT INTO t_tmp_child VALUES (2)
CREATE TEMP TABLE t_tmp_del (a integer) ON COMMIT DELETE ROWS
BEGIN
INSERT INTO t_tmp_del VALUES (1), (2)
SELECT count(*) FROM t_tmp_del
COMMIT
SELECT count(*) FROM t_tmp_del
INSERT INTO t_tmp_del VALUES (3)
SELECT count(*) FROM t_tmp_del
CREATE TEMP TABLE t_tmp_keep (a integer) ON COMMIT PRESERVE ROWS
BEGIN
INSERT INTO t_tmp_keep VALUES (1)
COMMIT
SELECT count(*) FROM t_tmp_keep
BEGIN
CREATE TEMP TABLE t_tmp_drop (a integer) ON COMMIT DROP
INSERT INTO t_tmp_drop VALUES (1)
SELECT * FROM t_tmp_drop
COMMIT
SELECT * FROM t_tmp_drop
SELECT count(*) FROM pg_class WHERE relname = 't_tmp_drop'
CREATE TEMP TABLE t_tmp_drop_now (a integer) ON COMMIT DROP
SELECT count(*) FROM pg_class WHERE relname = 't_tmp_drop_now'
BEGIN
CREATE TEMP TABLE t_tmp_rb (a integer PRIMARY KEY)
INSERT INTO t_tmp_rb VALUES (1)
SELECT * FROM t_tmp_rb
ROLLBACK
SELECT * FROM t_tmp_rb
SELECT count(*) FROM pg_class WHERE relname LIKE 't_tmp_rb%'
BEGIN
DROP TABLE t_tmp_keep
SELECT count(*) FROM pg_class WHERE relname = 't_tmp_keep'
ROLLBACK
SELECT count(*) FROM t_tmp_keep
BEGIN
INSERT INTO t_tmp_keep VALUES (2)
ROLLBACK
SELECT count(*) FROM t_tmp_keep
TRUNCATE t_tmp_keep
SELECT count(*) FROM t_tmp_keep
SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relname LIKE 't_tmp%' AND relkind = 'r'
DISCARD TEMP
SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relname LIKE 't_tmp%'
SELECT * FROM t_tmp_keep
SELECT count(*) FROM t_tmp_perm
CREATE TEMP TABLE t_tmp_all (a integer)
INSERT INTO t_tmp_all VALUES (1)
DISCARD ALL
SELECT * FROM t_tmp_all
SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relname LIKE 't_tmp%'
DROP TABLE t_tmp_perm
