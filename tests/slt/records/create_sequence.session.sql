DROP TABLE IF EXISTS t_cseq_a, t_cseq_b, t_cseq_c
DROP SEQUENCE IF EXISTS s_cseq_plain, s_cseq_down, s_cseq_cyc, s_cseq_small, s_cseq_int, s_cseq_owned, s_cseq_def, s_cseq_rb, s_cseq_new, s_cseq_renamed, s_cseq_col
CREATE SEQUENCE s_cseq_plain
SELECT nextval('s_cseq_plain'), nextval('s_cseq_plain'), currval('s_cseq_plain')
SELECT last_value, is_called FROM s_cseq_plain
SELECT lastval()
CREATE SEQUENCE s_cseq_plain
CREATE SEQUENCE IF NOT EXISTS s_cseq_plain
CREATE TABLE s_cseq_plain (a int)
CREATE SEQUENCE s_cseq_down INCREMENT BY -2 START WITH 5 MINVALUE -3 MAXVALUE 10
SELECT nextval('s_cseq_down'), nextval('s_cseq_down'), nextval('s_cseq_down'), nextval('s_cseq_down'), nextval('s_cseq_down')
SELECT nextval('s_cseq_down')
SELECT last_value, is_called FROM s_cseq_down
CREATE SEQUENCE s_cseq_cyc START 2 MINVALUE 1 MAXVALUE 3 CYCLE
SELECT nextval('s_cseq_cyc'), nextval('s_cseq_cyc'), nextval('s_cseq_cyc'), nextval('s_cseq_cyc'), nextval('s_cseq_cyc')
CREATE SEQUENCE s_cseq_small AS smallint MAXVALUE 3
SELECT nextval('s_cseq_small'), nextval('s_cseq_small'), nextval('s_cseq_small')
SELECT nextval('s_cseq_small')
CREATE SEQUENCE s_cseq_int AS integer INCREMENT -1
SELECT nextval('s_cseq_int'), nextval('s_cseq_int')
SELECT seqtypid::regtype, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_sequence WHERE seqrelid = 's_cseq_int'::regclass
SELECT seqtypid::regtype, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_sequence WHERE seqrelid = 's_cseq_plain'::regclass
SELECT seqtypid::regtype, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_sequence WHERE seqrelid = 's_cseq_small'::regclass
SELECT seqtypid::regtype, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_sequence WHERE seqrelid = 's_cseq_down'::regclass
CREATE SEQUENCE s_cseq_bad MINVALUE 10 MAXVALUE 5
CREATE SEQUENCE s_cseq_bad INCREMENT 0
CREATE SEQUENCE s_cseq_bad START 0
CREATE SEQUENCE s_cseq_bad START 20 MAXVALUE 10
CREATE SEQUENCE s_cseq_bad AS smallint MAXVALUE 100000
CREATE SEQUENCE s_cseq_bad AS integer MINVALUE -3000000000
CREATE SEQUENCE s_cseq_bad AS text
CREATE SEQUENCE s_cseq_bad CACHE 0
CREATE SEQUENCE s_cseq_bad START 1 START 2
CREATE SEQUENCE s_cseq_bad MAXVALUE abc
CREATE SEQUENCE s_cseq_bad MAXVALUE 5 MINVALUE 5
CREATE SEQUENCE s_cseq_bad OWNED BY t_cseq_nope.a
CREATE SEQUENCE s_cseq_bad OWNED BY t_cseq_nope
CREATE SEQUENCE nope_schema.s_cseq_bad
SELECT count(*) FROM pg_class WHERE relname = 's_cseq_bad'
CREATE SEQUENCE public.s_cseq_new CACHE 20 NO CYCLE NO MAXVALUE START WITH 100 NO MINVALUE INCREMENT BY 10
SELECT nextval('s_cseq_new'), nextval('public.s_cseq_new'), nextval('"s_cseq_new"')
SELECT schemaname, sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, cache_size FROM pg_sequences WHERE sequencename LIKE 's_cseq%' ORDER BY sequencename
SELECT sequencename, last_value FROM pg_sequences WHERE sequencename LIKE 's_cseq%' AND cache_size = 1 ORDER BY sequencename
SELECT sequence_schema, sequence_name, data_type, numeric_precision, numeric_precision_radix, numeric_scale, start_value, minimum_value, maximum_value, increment, cycle_option FROM information_schema.sequences WHERE sequence_name LIKE 's_cseq%' ORDER BY sequence_name
SELECT relname, relkind, relnamespace::regnamespace FROM pg_class WHERE relname LIKE 's_cseq%' ORDER BY relname
SELECT setval('s_cseq_plain', 42)
SELECT nextval('s_cseq_plain'), currval('s_cseq_plain')
SELECT setval('s_cseq_plain', 7, false)
SELECT last_value, is_called FROM s_cseq_plain
SELECT nextval('s_cseq_plain'), nextval('s_cseq_plain')
SELECT setval('s_cseq_down', 11)
SELECT setval('s_cseq_down', -4)
SELECT setval('s_cseq_down', -3)
SELECT nextval('s_cseq_down')
SELECT pg_sequence_last_value('s_cseq_down')
SELECT pg_sequence_last_value('s_cseq_plain')
ALTER SEQUENCE s_cseq_plain RESTART
SELECT last_value, is_called FROM s_cseq_plain
SELECT nextval('s_cseq_plain')
ALTER SEQUENCE s_cseq_plain RESTART WITH 50 INCREMENT BY 5
SELECT nextval('s_cseq_plain'), nextval('s_cseq_plain')
ALTER SEQUENCE s_cseq_plain INCREMENT 1
SELECT nextval('s_cseq_plain')
ALTER SEQUENCE s_cseq_plain MAXVALUE 100 CYCLE MINVALUE 40
SELECT seqstart, seqincrement, seqmax, seqmin, seqcycle FROM pg_sequence WHERE seqrelid = 's_cseq_plain'::regclass
ALTER SEQUENCE s_cseq_plain RESTART WITH 100
SELECT nextval('s_cseq_plain'), nextval('s_cseq_plain')
ALTER SEQUENCE s_cseq_plain MAXVALUE 30
ALTER SEQUENCE s_cseq_plain RESTART WITH 101
ALTER SEQUENCE s_cseq_plain RESTART WITH 39
ALTER SEQUENCE s_cseq_plain INCREMENT 0
ALTER SEQUENCE s_cseq_plain START WITH 45
SELECT seqstart FROM pg_sequence WHERE seqrelid = 's_cseq_plain'::regclass
ALTER SEQUENCE s_cseq_plain NO CYCLE CACHE 5
SELECT seqcycle, seqcache FROM pg_sequence WHERE seqrelid = 's_cseq_plain'::regclass
ALTER SEQUENCE s_cseq_small AS integer
SELECT seqtypid::regtype, seqmax, seqmin FROM pg_sequence WHERE seqrelid = 's_cseq_small'::regclass
ALTER SEQUENCE s_cseq_int AS bigint
SELECT seqtypid::regtype, seqmax, seqmin FROM pg_sequence WHERE seqrelid = 's_cseq_int'::regclass
ALTER SEQUENCE s_cseq_new AS smallint
SELECT seqtypid::regtype, seqmax, seqmin FROM pg_sequence WHERE seqrelid = 's_cseq_new'::regclass
ALTER SEQUENCE s_cseq_nope RESTART
ALTER SEQUENCE IF EXISTS s_cseq_nope RESTART
ALTER SEQUENCE s_cseq_plain AS varchar
ALTER SEQUENCE s_cseq_cyc RENAME TO s_cseq_renamed
SELECT nextval('s_cseq_renamed')
SELECT nextval('s_cseq_cyc')
ALTER SEQUENCE s_cseq_renamed SET SCHEMA public
CREATE TABLE t_cseq_a (id integer NOT NULL, v text, w integer)
CREATE SEQUENCE s_cseq_owned AS integer OWNED BY t_cseq_a.id
CREATE SEQUENCE s_cseq_col OWNED BY t_cseq_a.w
CREATE SEQUENCE s_cseq_bad OWNED BY t_cseq_a.nope
ALTER TABLE t_cseq_a ALTER COLUMN id SET DEFAULT nextval('s_cseq_owned'::regclass)
INSERT INTO t_cseq_a (v) VALUES ('a'), ('b')
SELECT id, v FROM t_cseq_a ORDER BY id
SELECT pg_get_serial_sequence('t_cseq_a', 'id'), pg_get_serial_sequence('t_cseq_a', 'w'), pg_get_serial_sequence('t_cseq_a', 'v')
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 't_cseq_a'::regclass
SELECT column_default FROM information_schema.columns WHERE table_name = 't_cseq_a' AND column_name = 'id'
SELECT d.deptype, a.attname FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid WHERE d.objid = 's_cseq_owned'::regclass AND d.classid = 'pg_class'::regclass
DROP SEQUENCE s_cseq_owned
DROP SEQUENCE s_cseq_owned RESTRICT
ALTER TABLE t_cseq_a DROP COLUMN w
SELECT count(*) FROM pg_class WHERE relname = 's_cseq_col'
ALTER SEQUENCE s_cseq_owned OWNED BY NONE
SELECT pg_get_serial_sequence('t_cseq_a', 'id')
ALTER SEQUENCE s_cseq_owned OWNED BY t_cseq_a.id
DROP TABLE t_cseq_a
SELECT count(*) FROM pg_class WHERE relname = 's_cseq_owned'
CREATE SEQUENCE s_cseq_def START 10
CREATE TABLE t_cseq_b (id bigint DEFAULT nextval('s_cseq_def'), v text)
INSERT INTO t_cseq_b (v) VALUES ('x')
SELECT id, v FROM t_cseq_b ORDER BY id
DROP SEQUENCE s_cseq_def
DROP SEQUENCE s_cseq_def CASCADE
SELECT column_default FROM information_schema.columns WHERE table_name = 't_cseq_b' AND column_name = 'id'
INSERT INTO t_cseq_b (v) VALUES ('y')
SELECT id, v FROM t_cseq_b ORDER BY id
CREATE TABLE t_cseq_c (id serial, v text)
CREATE SEQUENCE t_cseq_c_id_seq
DROP SEQUENCE t_cseq_c_id_seq
ALTER SEQUENCE t_cseq_c_id_seq RESTART WITH 20
INSERT INTO t_cseq_c (v) VALUES ('s')
SELECT id, v FROM t_cseq_c ORDER BY id
SELECT pg_get_serial_sequence('t_cseq_c', 'id')
DROP SEQUENCE t_cseq_c
SELECT nextval('t_cseq_c')
BEGIN
CREATE SEQUENCE s_cseq_rb START 5
SELECT nextval('s_cseq_rb')
ROLLBACK
SELECT nextval('s_cseq_rb')
SELECT count(*) FROM pg_class WHERE relname = 's_cseq_rb'
BEGIN
CREATE SEQUENCE s_cseq_rb START 5
COMMIT
SELECT nextval('s_cseq_rb')
BEGIN
DROP SEQUENCE s_cseq_rb
ROLLBACK
SELECT nextval('s_cseq_rb')
BEGIN
ALTER SEQUENCE s_cseq_rb INCREMENT 10 MAXVALUE 1000
ROLLBACK
SELECT seqincrement, seqmax FROM pg_sequence WHERE seqrelid = 's_cseq_rb'::regclass
SELECT nextval('s_cseq_rb')
DROP SEQUENCE s_cseq_nope
DROP SEQUENCE IF EXISTS s_cseq_nope, s_cseq_rb
DROP SEQUENCE t_cseq_b
DROP TABLE s_cseq_plain
DROP SEQUENCE s_cseq_plain, s_cseq_down
SELECT nextval('s_cseq_plain')
DROP SEQUENCE s_cseq_small, s_cseq_int, s_cseq_new, s_cseq_renamed RESTRICT
DROP TABLE t_cseq_b, t_cseq_c
SELECT count(*) FROM pg_class WHERE relname LIKE 's_cseq%' OR relname LIKE 't_cseq%'
