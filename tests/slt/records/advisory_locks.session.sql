SELECT pg_advisory_lock(1), 1 AS taken
SELECT pg_advisory_lock(1), pg_try_advisory_lock(1)
SELECT pg_advisory_unlock(1), pg_advisory_unlock(1), pg_advisory_unlock(1), pg_advisory_unlock(1)
SELECT pg_try_advisory_lock(0, 1), pg_advisory_unlock(1), pg_advisory_unlock(0, 1), pg_advisory_unlock(0, 1)
SELECT pg_advisory_lock_shared(5), pg_try_advisory_lock(5), pg_advisory_unlock_shared(5), pg_advisory_unlock(5), pg_advisory_unlock(5)
SELECT pg_advisory_unlock_shared(5)
SELECT pg_advisory_lock(-9223372036854775808), pg_advisory_unlock(-9223372036854775808)
SELECT pg_advisory_lock(-2147483648, 2147483647), pg_advisory_unlock(-2147483648, 2147483647)
SELECT pg_advisory_lock(NULL), pg_try_advisory_lock(NULL), pg_advisory_unlock(NULL, 1)
SELECT pg_typeof(pg_advisory_lock(2)), pg_typeof(pg_try_advisory_lock(2)), pg_typeof(pg_advisory_unlock(2)), pg_typeof(pg_advisory_unlock(2))
BEGIN
SELECT pg_advisory_xact_lock(3), pg_try_advisory_xact_lock(3), pg_try_advisory_xact_lock_shared(3)
SELECT pg_advisory_unlock(3)
COMMIT
SELECT pg_advisory_unlock(3)
SELECT pg_advisory_xact_lock_shared(4), pg_advisory_unlock_shared(4)
SELECT pg_advisory_lock(10), pg_advisory_lock(11), pg_advisory_lock_shared(12), 3 AS taken
SELECT pg_advisory_unlock_all(), 1 AS released
SELECT pg_advisory_unlock(10), pg_advisory_unlock(11), pg_advisory_unlock_shared(12)
SELECT x, pg_advisory_lock(x) FROM generate_series(20, 22) AS x
SELECT pg_advisory_unlock(x) FROM generate_series(20, 23) AS x ORDER BY x
SELECT pg_advisory_lock(30), 30 AS taken
DISCARD ALL
SELECT pg_advisory_unlock(30)
SELECT pg_advisory_lock('a')
SELECT pg_advisory_lock(1, 2, 3)
SELECT pg_advisory_lock(4294967296, 1)
SELECT pg_advisory_lock(1.5::numeric, 1)
SELECT pg_advisory_lock()
SELECT pg_advisory_lock(1.5)
SELECT pg_advisory_lock('1'::text)
SELECT pg_advisory_lock(1::int2, '2'), pg_advisory_unlock(1, 2)
