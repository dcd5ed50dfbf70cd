DROP TABLE IF EXISTS t_mwr_queue, t_mwr_done
CREATE TABLE t_mwr_queue (id integer PRIMARY KEY, job text)
CREATE TABLE t_mwr_done (id integer PRIMARY KEY, job text)
INSERT INTO t_mwr_queue VALUES (1, 'a'), (2, 'b'), (3, 'c')
BEGIN
WITH moved AS (DELETE FROM t_mwr_queue WHERE id < 3 RETURNING id, job) INSERT INTO t_mwr_done SELECT id + 100, job FROM moved RETURNING id, job
SELECT id, job FROM t_mwr_queue ORDER BY id
SELECT id, job FROM t_mwr_done ORDER BY id
ROLLBACK
SELECT id, job FROM t_mwr_queue ORDER BY id
SELECT id, job FROM t_mwr_done ORDER BY id
BEGIN
WITH gone AS (DELETE FROM t_mwr_queue WHERE id = 1) INSERT INTO t_mwr_done VALUES (7, 'x')
SAVEPOINT s
WITH gone AS (DELETE FROM t_mwr_queue WHERE id = 2) UPDATE t_mwr_done SET job = 'y' WHERE id = 7
ROLLBACK TO SAVEPOINT s
WITH d AS (DELETE FROM t_mwr_queue WHERE id = 3 RETURNING *) INSERT INTO t_mwr_done SELECT 7, job FROM d
SELECT id, job FROM t_mwr_queue ORDER BY id
ROLLBACK
SELECT id, job FROM t_mwr_queue ORDER BY id
SELECT id, job FROM t_mwr_done ORDER BY id
BEGIN
WITH gone AS (DELETE FROM t_mwr_queue WHERE id = 1) INSERT INTO t_mwr_done VALUES (7, 'x')
COMMIT
SELECT id, job FROM t_mwr_queue ORDER BY id
SELECT id, job FROM t_mwr_done ORDER BY id
DROP TABLE t_mwr_queue, t_mwr_done
