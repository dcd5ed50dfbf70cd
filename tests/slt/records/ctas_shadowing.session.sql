DROP TABLE IF EXISTS t_ctas_sh, t_ctas_sh2
CREATE TABLE t_ctas_sh (a int, b text)
INSERT INTO t_ctas_sh VALUES (1, 'one'), (2, 'two'), (3, 'three')
CREATE TEMP TABLE t_ctas_sh AS SELECT a, b FROM t_ctas_sh WHERE a > 1
SELECT a, b FROM t_ctas_sh ORDER BY a
SELECT a, b FROM public.t_ctas_sh ORDER BY a
DROP TABLE t_ctas_sh
CREATE TEMP TABLE t_ctas_sh AS SELECT a * 10 AS ten FROM t_ctas_sh WHERE b <> 'two'
SELECT * FROM t_ctas_sh ORDER BY 1
DROP TABLE t_ctas_sh
CREATE TEMP TABLE t_ctas_sh AS SELECT count(*) AS n, max(b) AS top FROM t_ctas_sh
SELECT * FROM t_ctas_sh
DROP TABLE t_ctas_sh
SELECT a, 'x' AS label INTO TEMP t_ctas_sh FROM t_ctas_sh ORDER BY a DESC LIMIT 2
SELECT * FROM t_ctas_sh ORDER BY a
DROP TABLE t_ctas_sh
CREATE TEMP TABLE t_ctas_sh AS SELECT s.a, t.b FROM t_ctas_sh s JOIN t_ctas_sh t ON t.a = s.a + 1
SELECT * FROM t_ctas_sh ORDER BY a
DROP TABLE t_ctas_sh
CREATE TEMP TABLE t_ctas_sh AS SELECT a FROM t_ctas_sh WHERE a IN (SELECT a FROM t_ctas_sh WHERE b LIKE 't%')
SELECT * FROM t_ctas_sh ORDER BY a
CREATE TABLE t_ctas_sh2 AS SELECT a, 'new' AS c FROM t_ctas_sh
SELECT * FROM t_ctas_sh2 ORDER BY a
DROP TABLE t_ctas_sh
DROP TABLE t_ctas_sh, t_ctas_sh2
