// Google's Node Bigtable client (@google-cloud/bigtable) against a server at
// BIGTABLE_EMULATOR_HOST: table admin (including `table.create({families: ['cf']})`, a family with
// no GC rule), writes, conditional and read-modify-write, batched mutations, filtered reads,
// sample row keys, a 2 MiB cell and a row of 1 500 cells of 1 KiB. Each step uses its own rows;
// expected values are literals written here. Prints one line per step; exits 1 if any failed.
//
// Usage: BIGTABLE_EMULATOR_HOST=HOST:PORT node test_client.js PROJECT INSTANCE TABLE_PREFIX
'use strict';

const assert = require('node:assert/strict');
const {Bigtable} = require('@google-cloud/bigtable');

const [project, instanceId, prefix] = process.argv.slice(2);
const bigtable = new Bigtable({projectId: project});
const instance = bigtable.instance(instanceId);
const adminTableId = `${prefix}_admin`;
const dataTableId = `${prefix}_data`;
// Bigtable timestamps are microseconds at millisecond granularity.
const T1 = 1_000_000;
const T2 = 2_000_000;
const T3 = 3_000_000;

/** n printable bytes that differ per seed, so swapped or shifted chunks do not compare equal. */
function pattern(seed, n) {
  const parts = [];
  let length = 0;
  for (let i = 0; length < n; i++) {
    const part = `${seed}.${i};`;
    parts.push(part);
    length += part.length;
  }
  return Buffer.from(parts.join('')).subarray(0, n);
}

/** A row's cells as {"family:qualifier": [values newest first]} (values as strings). */
function cellsOf(row) {
  const out = {};
  for (const [family, columns] of Object.entries(row.data)) {
    for (const [qualifier, cells] of Object.entries(columns)) {
      out[`${family}:${qualifier}`] = cells.map(c => c.value.toString());
    }
  }
  return out;
}

async function tableIds() {
  const [tables] = await instance.getTables();
  return tables.map(t => t.id);
}

async function stepAdmin() {
  const table = instance.table(adminTableId);
  await table.create({
    families: [
      'plain', // no GC rule: the map entry must still carry an (empty) ColumnFamily
      {name: 'versions', rule: {versions: 2}},
      {name: 'aged', rule: {age: {seconds: 7 * 86400, nanos: 0}}},
      {name: 'either', rule: {versions: 3, age: {seconds: 3600, nanos: 0}, union: true}},
    ],
  });
  assert.ok((await tableIds()).includes(adminTableId), 'created table not listed');
  let [families] = await table.getFamilies();
  const byName = fams => Object.fromEntries(fams.map(f => [f.id, f.metadata.gcRule]));
  let rules = byName(families);
  assert.deepEqual(Object.keys(rules).sort(), ['aged', 'either', 'plain', 'versions']);
  assert.equal(rules.plain, null);
  assert.equal(rules.versions.maxNumVersions, 2);
  assert.equal(Number(rules.aged.maxAge.seconds), 7 * 86400);
  assert.equal(rules.either.union.rules.length, 2);

  await table.createFamily('added', {rule: {versions: 1}});
  await table.family('versions').setMetadata({rule: {versions: 5}});
  await table.family('aged').delete();
  [families] = await table.getFamilies();
  rules = byName(families);
  assert.deepEqual(Object.keys(rules).sort(), ['added', 'either', 'plain', 'versions']);
  assert.equal(rules.added.maxNumVersions, 1);
  assert.equal(rules.versions.maxNumVersions, 5);

  await table.delete();
  assert.ok(!(await tableIds()).includes(adminTableId), 'deleted table still listed');
  const [exists] = await table.exists();
  assert.equal(exists, false);
}

async function stepWrites() {
  const table = instance.table(dataTableId);
  await table.row('w#1').save({cf: {name: {value: 'Ada', timestamp: T1}}});
  await table.row('w#1').save({cf: {name: {value: 'Ada L.', timestamp: T2}}, meta: {lang: 'en'}});
  const [row] = await table.row('w#1').get();
  assert.deepEqual(cellsOf(row), {'cf:name': ['Ada L.', 'Ada'], 'meta:lang': ['en']});

  await table.insert(
    [0, 1, 2].map(i => ({key: `w#batch${i}`, data: {cf: {n: {value: String(i), timestamp: T1}}}}))
  );
  await table.mutate([
    {key: 'w#batch1', method: 'delete'},
    {key: 'w#batch3', method: 'insert', data: {cf: {n: {value: '3', timestamp: T1}}}},
  ]);
  const [rows] = await table.getRows({prefix: 'w#batch'});
  assert.deepEqual(
    rows.map(r => [r.id, cellsOf(r)['cf:n'][0]]),
    [['w#batch0', '0'], ['w#batch2', '2'], ['w#batch3', '3']]
  );
  // A mutation to a family the table lacks fails that entry alone.
  await assert.rejects(
    table.insert([
      {key: 'w#ok', data: {cf: {q: {value: '1', timestamp: T1}}}},
      {key: 'w#bad', data: {nosuchfamily: {q: {value: '1', timestamp: T1}}}},
    ]),
    err => err.name === 'PartialFailureError' && err.errors.length === 1 && err.errors[0].entry.key === 'w#bad'
  );
  const [[ok], [bad]] = await Promise.all([table.row('w#ok').exists(), table.row('w#bad').exists()]);
  assert.deepEqual([ok, bad], [true, false]);
}

async function stepConditionalAndRmw() {
  const table = instance.table(dataTableId);
  await table.row('c#1').save({cf: {state: {value: 'open', timestamp: T1}}});
  const onMatch = [{method: 'insert', data: {cf: {result: {value: 'was-open', timestamp: T1}}}}];
  const onNoMatch = [{method: 'insert', data: {cf: {result: {value: 'was-not-open', timestamp: T1}}}}];
  let [matched] = await table.row('c#1').filter([{column: 'state'}, {value: 'open'}], {onMatch, onNoMatch});
  assert.equal(matched, true);
  [matched] = await table.row('c#1').filter({value: 'closed'}, {
    onMatch: [{method: 'insert', data: {cf: {other: {value: 'was-closed', timestamp: T1}}}}],
    onNoMatch: [{method: 'insert', data: {cf: {other: {value: 'was-not-closed', timestamp: T1}}}}],
  });
  assert.equal(matched, false);
  const [row] = await table.row('c#1').get();
  assert.deepEqual(cellsOf(row), {'cf:other': ['was-not-closed'], 'cf:result': ['was-open'], 'cf:state': ['open']});

  let [value] = await table.row('c#rmw').increment('cf:n', 41);
  assert.equal(value, 41);
  [value] = await table.row('c#rmw').increment('cf:n');
  assert.equal(value, 42);
  await table.row('c#rmw').createRules([{column: 'cf:s', append: 'x'}]);
  const [apiResponse] = await table.row('c#rmw').createRules([{column: 'cf:s', append: 'yz'}]);
  const appended = apiResponse.row.families[0].columns[0].cells[0].value;
  assert.equal(Buffer.from(appended).toString(), 'xyz');
}

async function stepFilteredReads() {
  const table = instance.table(dataTableId);
  await table.insert(
    [0, 1, 2, 3, 4].map(i => ({
      key: `f#${i}`,
      data: {
        cf: {a: {value: `a${i}-old`, timestamp: T1}, b: {value: `b${i}`, timestamp: T3}},
        meta: {m: {value: `m${i}`, timestamp: T1}},
      },
    }))
  );
  await table.insert([0, 1, 2, 3, 4].map(i => ({key: `f#${i}`, data: {cf: {a: {value: `a${i}`, timestamp: T2}}}})));
  const read = async (filter, extra = {}) => {
    const [rows] = await table.getRows({prefix: 'f#', filter, ...extra});
    return rows.map(r => [r.id, cellsOf(r)]);
  };
  const each = f => [0, 1, 2, 3, 4].map(i => [`f#${i}`, f(i)]);
  assert.deepEqual(await read({family: 'meta'}), each(i => ({'meta:m': [`m${i}`]})));
  assert.deepEqual(await read({column: {name: 'a', cellLimit: 1}}), each(i => ({'cf:a': [`a${i}`]})));
  assert.deepEqual(await read({time: {start: new Date(3000)}}), each(i => ({'cf:b': [`b${i}`]})));
  assert.deepEqual(
    (await read({row: /f#[13]/})).map(([k]) => k),
    ['f#1', 'f#3']
  );
  assert.deepEqual(await read({value: {start: 'b2', end: {value: 'b3', inclusive: true}}}), [
    ['f#2', {'cf:b': ['b2']}],
    ['f#3', {'cf:b': ['b3']}],
  ]);
  assert.deepEqual(await read([{family: 'cf'}, {value: {strip: true}}], {limit: 2}), [
    ['f#0', {'cf:a': ['', ''], 'cf:b': ['']}],
    ['f#1', {'cf:a': ['', ''], 'cf:b': ['']}],
  ]);
  assert.deepEqual(
    await read({condition: {test: {value: 'm4'}, pass: {column: 'b'}, fail: {all: false}}}),
    [['f#4', {'cf:b': ['b4']}]]
  );
  const [labelled] = await table.getRows({keys: ['f#0'], filter: [{family: 'meta'}, {label: 'seen'}]});
  assert.deepEqual(labelled[0].data.meta.m[0].labels, ['seen']);
  const [[two], [none]] = await Promise.all([table.row('f#2').exists(), table.row('f#nope').exists()]);
  assert.deepEqual([two, none], [true, false]);
}

async function stepSampleRowKeys() {
  const table = instance.table(dataTableId);
  const entries = [];
  for (let i = 0; i < 3000; i++) {
    entries.push({key: `s#${String(i).padStart(5, '0')}`, data: {cf: {v: {value: pattern(String(i), 1024), timestamp: T1}}}});
  }
  await table.insert(entries);
  const [samples] = await table.sampleRowKeys();
  assert.ok(samples.length > 0, 'no samples');
  const offsets = samples.map(s => Number(s.offset));
  assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b));
  const keys = samples.map(s => Buffer.from(s.key).toString()).filter(k => k !== '');
  assert.deepEqual(keys, [...keys].sort());
  assert.ok(keys.length > 0, `no split point in a table of over 3 MB: ${JSON.stringify(samples.slice(0, 3))}`);
}

async function stepBigRows() {
  const table = instance.table(dataTableId);
  const big = pattern('big', 2 << 20);
  await table.row('big#cell').save({cf: {big: {value: big, timestamp: T1}}});
  const wide = {};
  for (let i = 0; i < 1500; i++) {
    const q = `q${String(i).padStart(4, '0')}`;
    wide[q] = {value: pattern(q, 1024), timestamp: T1};
  }
  await table.row('big#wide').save({cf: wide});

  const [cellRow] = await table.row('big#cell').get({decode: false});
  assert.equal(cellRow.data.cf.big.length, 1);
  assert.ok(Buffer.from(cellRow.data.cf.big[0].value).equals(big), '2 MiB cell differs');
  const [wideRow] = await table.row('big#wide').get({decode: false});
  assert.equal(Object.keys(wideRow.data.cf).length, 1500);
  for (const [q, {value}] of Object.entries(wide)) {
    const cells = wideRow.data.cf[q];
    assert.ok(cells && cells.length === 1 && Buffer.from(cells[0].value).equals(value), `cell ${q} differs`);
  }
  const [rows] = await table.getRows({prefix: 'big#', decode: false});
  assert.deepEqual(rows.map(r => r.id.toString()), ['big#cell', 'big#wide']);
  assert.ok(Buffer.from(rows[0].data.cf.big[0].value).equals(big), 'scan: 2 MiB cell differs');
  assert.equal(Object.keys(rows[1].data.cf).length, 1500);
}

const steps = [
  ['admin: create (families: [\'plain\'] and GC rules), list, modify families, delete', stepAdmin],
  ['writes: save, insert, mutate, a failed entry alone', stepWrites],
  ['conditional (filter with onMatch/onNoMatch) and read-modify-write', stepConditionalAndRmw],
  ['filtered reads', stepFilteredReads],
  ['sample row keys', stepSampleRowKeys],
  ['2 MiB cell and a row of 1 500 cells of 1 KiB', stepBigRows],
];

async function main() {
  let failed = 0;
  try {
    await instance.table(dataTableId).create({families: ['cf', 'meta']});
  } catch (err) {
    failed++;
    console.log(`node: FAIL setup: create table ${dataTableId}: ${String(err.message).split('\n')[0]}`);
    // The steps still run: they tell what else works if the table was created and only the
    // answer failed (each fails on its own if the table is missing).
  }
  for (const [name, fn] of steps) {
    const started = Date.now();
    try {
      await fn();
      console.log(`node: PASS ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    } catch (err) {
      failed++;
      console.log(`node: FAIL ${name}: ${String(err.message).split('\n')[0]}`);
      console.error(err);
    }
  }
  try {
    await instance.table(dataTableId).delete();
  } catch (err) {
    failed++;
    console.log(`node: FAIL cleanup: delete table ${dataTableId}: ${String(err.message).split('\n')[0]}`);
  }
  console.log(`node: ${failed} failure(s) in ${steps.length} steps`);
  return failed ? 1 : 0;
}

main().then(
  code => process.exit(code),
  err => {
    console.error(err);
    process.exit(1);
  }
);
