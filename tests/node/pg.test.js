// node-postgres (`pg`) against a running tierdb server (port from TIERDB_PORT): connect,
// parameterized queries of many types (text parameters, results parsed by pg's type
// parsers), a transaction committed and one rolled back, a Pool under concurrent use, and
// errors carrying PostgreSQL's SQLSTATE, message and position.
//
// Run: cd tests/node && npm ci && TIERDB_PORT=5432 node --test

'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Client, Pool } = require('pg');

function config() {
  const port = process.env.TIERDB_PORT;
  if (!port) {
    throw new Error('TIERDB_PORT is not set: start `tierdb serve` and export its port');
  }
  return { host: '127.0.0.1', port: Number(port), user: 'tierdb', database: 'tierdb' };
}

async function withClient(body) {
  const client = new Client(config());
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

test('connect and read the server settings pg relies on', async () => {
  await withClient(async (client) => {
    const { rows } = await client.query('SELECT 1 AS one, current_user AS who');
    assert.deepEqual(rows, [{ one: 1, who: 'tierdb' }]);
    const version = await client.query('SHOW server_version');
    assert.match(version.rows[0].server_version, /^15\./);
    const encoding = await client.query('SHOW client_encoding');
    assert.equal(encoding.rows[0].client_encoding, 'UTF8');
  });
});

test('parameterized queries of many types', async () => {
  await withClient(async (client) => {
    const at = new Date(Date.UTC(2024, 1, 29, 23, 59, 59, 123));
    const { rows, fields } = await client.query(
      `SELECT $1::int4 AS i, $2::int8 AS big, $3::text AS t, $4::numeric AS n, $5::bool AS b,
              $6::float8 AS f, $7::date AS d, $8::timestamptz AS tz, $9::bytea AS raw,
              $10::int4[] AS numbers, $11::text[] AS words, $12::jsonb AS doc, $13::text AS missing`,
      [
        2147483647,
        '-9223372036854775808',
        'héllo ✓',
        '12345678901234567890.0001',
        true,
        1.5e-300,
        '1999-12-31',
        at,
        Buffer.from([0, 1, 254, 255]),
        [1, null, -3],
        ['a', 'b c', ''],
        { a: [1, 2, { b: null }] },
        null,
      ],
    );
    const row = rows[0];
    assert.equal(row.i, 2147483647);
    // int8 and numeric come back as strings (pg parses neither into a lossy JS number).
    assert.equal(row.big, '-9223372036854775808');
    assert.equal(row.t, 'héllo ✓');
    assert.equal(row.n, '12345678901234567890.0001');
    assert.equal(row.b, true);
    assert.equal(row.f, 1.5e-300);
    assert.equal(row.tz.getTime(), at.getTime());
    assert.deepEqual(row.raw, Buffer.from([0, 1, 254, 255]));
    assert.deepEqual(row.numbers, [1, null, -3]);
    assert.deepEqual(row.words, ['a', 'b c', '']);
    assert.deepEqual(row.doc, { a: [1, 2, { b: null }] });
    assert.equal(row.missing, null);
    // A date is parsed as local midnight of that day.
    assert.equal(row.d.getFullYear(), 1999);
    assert.equal(row.d.getMonth(), 11);
    assert.equal(row.d.getDate(), 31);
    const types = Object.fromEntries(fields.map((field) => [field.name, field.dataTypeID]));
    assert.deepEqual(types, {
      i: 23, big: 20, t: 25, n: 1700, b: 16, f: 701, d: 1082, tz: 1184, raw: 17,
      numbers: 1007, words: 1009, doc: 3802, missing: 25,
    });
  });
});

test('named prepared statement and rowMode array', async () => {
  await withClient(async (client) => {
    const query = { name: 'add-one', text: 'SELECT $1::int + 1 AS next', values: [1] };
    assert.equal((await client.query(query)).rows[0].next, 2);
    assert.equal((await client.query({ ...query, values: [41] })).rows[0].next, 42);
    const arrays = await client.query({
      text: 'SELECT n, n * n FROM generate_series(1, $1::int) AS n ORDER BY n',
      values: [3],
      rowMode: 'array',
    });
    assert.deepEqual(arrays.rows, [[1, 1], [2, 4], [3, 9]]);
  });
});

test('transactions commit and roll back', async () => {
  await withClient(async (client) => {
    await client.query('DROP TABLE IF EXISTS node_accounts');
    await client.query('CREATE TABLE node_accounts (id int PRIMARY KEY, balance numeric(10, 2) NOT NULL)');
    await client.query('BEGIN');
    await client.query('INSERT INTO node_accounts VALUES ($1, $2), ($3, $4)', [1, '100.00', 2, '0']);
    await client.query('COMMIT');
    await client.query('BEGIN');
    const moved = await client.query(
      'UPDATE node_accounts SET balance = balance - $1 WHERE id = $2 RETURNING balance', ['30', 1]);
    assert.equal(moved.rowCount, 1);
    assert.equal(moved.rows[0].balance, '70.00');
    await client.query('ROLLBACK');
    const { rows } = await client.query('SELECT id, balance FROM node_accounts ORDER BY id');
    assert.deepEqual(rows, [{ id: 1, balance: '100.00' }, { id: 2, balance: '0.00' }]);
    // An error inside a block fails it (25P02) until ROLLBACK.
    await client.query('BEGIN');
    await assert.rejects(client.query('INSERT INTO node_accounts VALUES (1, 5)'), { code: '23505' });
    await assert.rejects(client.query('SELECT 1'), { code: '25P02' });
    await client.query('ROLLBACK');
    const count = await client.query('SELECT count(*)::int AS n FROM node_accounts');
    assert.equal(count.rows[0].n, 2);
    await client.query('DROP TABLE node_accounts');
  });
});

test('pool under concurrent use', async () => {
  const pool = new Pool({ ...config(), max: 4 });
  try {
    await pool.query('DROP TABLE IF EXISTS node_pool');
    await pool.query('CREATE TABLE node_pool (worker int, n int)');
    await Promise.all(Array.from({ length: 10 }, async (_, worker) => {
      for (let n = 0; n < 5; n += 1) {
        await pool.query('INSERT INTO node_pool VALUES ($1, $2)', [worker, n]);
      }
    }));
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('DELETE FROM node_pool WHERE worker = $1', [9]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const { rows } = await pool.query(
      'SELECT count(DISTINCT worker)::int AS workers, count(*)::int AS total FROM node_pool');
    assert.deepEqual(rows, [{ workers: 9, total: 45 }]);
    assert.ok(pool.totalCount <= 4, `pool opened ${pool.totalCount} connections`);
    await pool.query('DROP TABLE node_pool');
  } finally {
    await pool.end();
  }
});

test('errors carry the SQLSTATE', async () => {
  await withClient(async (client) => {
    await assert.rejects(client.query('SELECT * FROM node_no_such_table'), (error) => {
      assert.equal(error.code, '42P01');
      assert.equal(error.message, 'relation "node_no_such_table" does not exist');
      assert.equal(error.severity, 'ERROR');
      return true;
    });
    await assert.rejects(client.query('SELECT 1 / $1::int', [0]), { code: '22012', message: 'division by zero' });
    await assert.rejects(client.query('SELECT $1::int', ['twelve']), {
      code: '22P02',
      message: 'invalid input syntax for type integer: "twelve"',
    });
    await assert.rejects(client.query('SELEC 1'), { code: '42601' });
    // The connection is still usable after errors.
    assert.equal((await client.query('SELECT 2 AS two')).rows[0].two, 2);
  });
});
