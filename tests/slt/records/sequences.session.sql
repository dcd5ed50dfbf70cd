DROP TABLE IF EXISTS seq_t
DROP TABLE IF EXISTS seq_i
DROP TABLE IF EXISTS seq_bad
CREATE TABLE seq_t (id serial PRIMARY KEY, small smallserial, big bigserial, v text)
SELECT currval('seq_t_id_seq')
SELECT lastval()
INSERT INTO seq_t (v) VALUES ('a'), ('b') RETURNING id, small, big, v
SELECT currval('seq_t_id_seq'), currval('seq_t_small_seq'), currval('seq_t_big_seq')
SELECT lastval()
SELECT nextval('seq_t_id_seq'), currval('seq_t_id_seq'), lastval()
SELECT nextval('public.seq_t_id_seq'), nextval('"seq_t_id_seq"'), nextval('SEQ_T_ID_SEQ'), nextval('public."seq_t_id_seq"')
SELECT nextval('seq_t_id_seq'::regclass)
SELECT nextval('"SEQ_T_ID_SEQ"')
SELECT nextval('nope.seq_t_id_seq')
SELECT currval('seq_t')
SELECT currval('nope')
SELECT nextval('pg_class')
SELECT setval('seq_t_id_seq', 100)
SELECT currval('seq_t_id_seq'), lastval()
SELECT nextval('seq_t_id_seq'), lastval()
SELECT setval('seq_t_id_seq', 200, false)
SELECT currval('seq_t_id_seq')
SELECT nextval('seq_t_id_seq'), nextval('seq_t_id_seq')
SELECT setval('seq_t_id_seq', 300, true)
SELECT nextval('seq_t_id_seq')
SELECT setval('seq_t_id_seq', 0)
SELECT setval('seq_t_id_seq', -5, false)
SELECT setval('seq_t_id_seq', 2147483648)
SELECT setval('seq_t_id_seq', 2147483647)
SELECT nextval('seq_t_id_seq')
SELECT setval('seq_t_id_seq', NULL)
SELECT setval('seq_t_id_seq', 5, NULL)
SELECT setval(NULL, 5)
SELECT nextval('seq_t_id_seq')
SELECT setval('seq_t_small_seq', 32766)
SELECT nextval('seq_t_small_seq')
SELECT nextval('seq_t_small_seq')
INSERT INTO seq_t (v) VALUES ('c')
SELECT nextval('seq_t_small_seq')
SELECT setval('seq_t_small_seq', 3)
SELECT setval('seq_t_big_seq', 9223372036854775807)
SELECT nextval('seq_t_big_seq')
SELECT setval('seq_t_big_seq', 10)
BEGIN
SELECT setval('seq_t_id_seq', 1000)
SELECT nextval('seq_t_id_seq')
ROLLBACK
SELECT nextval('seq_t_id_seq'), currval('seq_t_id_seq')
BEGIN
SELECT nextval('seq_t_id_seq')
ROLLBACK
SELECT nextval('seq_t_id_seq')
SELECT setval('seq_t_id_seq', 20, false)
INSERT INTO seq_t (v) VALUES ('d') RETURNING id, small, big, v
SELECT id, small, big, v FROM seq_t ORDER BY id
SELECT setval(pg_get_serial_sequence('"seq_t"', 'id'), coalesce(max("id"), 1), max("id") IS NOT null) FROM "seq_t"
SELECT nextval(pg_get_serial_sequence('seq_t', 'id'))
CREATE TABLE seq_i (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)
INSERT INTO seq_i (v) VALUES ('x'), ('y')
SELECT setval(pg_get_serial_sequence('seq_i', 'id'), 50)
INSERT INTO seq_i (v) VALUES ('z') RETURNING id, v
SELECT currval('seq_i_id_seq'), lastval()
SELECT nextval('seq_i_id_seq')
DISCARD SEQUENCES
SELECT currval('seq_i_id_seq')
SELECT lastval()
SELECT nextval('seq_t_big_seq') > 0
SELECT lastval() = currval('seq_t_big_seq')
DROP TABLE seq_t
SELECT lastval()
SELECT currval('seq_t_id_seq')
CREATE TABLE seq_bad (a int DEFAULT nextval('nope'))
CREATE TABLE seq_bad (a int DEFAULT nextval('public.nope'::regclass))
CREATE TABLE seq_bad (a int DEFAULT nextval('other.nope'))
DISCARD PLANS
DISCARD TEMP
DISCARD TEMPORARY
DISCARD SEQUENCES
DISCARD
DISCARD EVERYTHING
BEGIN
DISCARD PLANS
DISCARD ALL
ROLLBACK
SET work_mem = '1MB'
SET application_name = 'seq_test'
PREPARE seq_p AS SELECT 1
SELECT nextval('seq_i_id_seq') > 0
DISCARD ALL
SHOW work_mem
SELECT current_setting('application_name') = 'seq_test'
EXECUTE seq_p
SELECT lastval()
PREPARE seq_p AS SELECT 2
EXECUTE seq_p
DEALLOCATE seq_p
DROP TABLE seq_i
