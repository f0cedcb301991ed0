// The calls every entry of the npm package must answer alike (Node `import`, Node `require`,
// the esbuild bundle in Chromium): `rowkit` is the package's module object as that entry gives
// it, `vectors` the shared mount table vectors (../shared/vectors/mounttable.json). Throws on
// the first wrong answer; resolves to what was checked, one line per check.
export async function run(rowkit, vectors) {
  const checked = [];
  // JSON text equality: member order counts (Arsenal keeps a value's member order).
  const expect = (what, got, want) => {
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
  };

  // Codecs: every row key vector, encoded from its name and decoded back from its bytes.
  for (const v of vectors.row_keys) {
    expect(`encodeMtKey(${JSON.stringify(v.name)}).row_key_hex`, rowkit.encodeMtKey(v.name).row_key_hex, v.row_key_hex);
    const decoded = rowkit.decodeKey('auto', `hex:${v.row_key_hex}`);
    expect(`decodeKey of ${v.row_key_hex}`, [decoded.schema, decoded.name, decoded.row_key_hex], ['mt', v.cleaned.slice(1), v.row_key_hex]);
  }
  checked.push(`encodeMtKey and decodeKey on ${vectors.row_keys.length} mount table vectors`);

  // An offline client: write, then read back through another client of the same store.
  const mt = new rowkit.MountTable();
  await mt.setup();
  const deadline = await mt.mount('npm/check', '/127.0.0.1:8101', 60);
  const entry = await new rowkit.MountTable().resolve('npm/check');
  expect('resolve after mount', entry.servers.map((s) => [s.server, s.deadlineUs]), [['/127.0.0.1:8101', deadline]]);
  checked.push('offline MountTable: mount, then resolve from a second client');

  const om = new rowkit.ObjectMetadata();
  await om.setup();
  await om.createBucket('npm-bucket');
  const value = { 'content-length': 4, 'content-type': 'text/plain', tags: ['a', 'b'] };
  await om.putObject('npm-bucket', 'dir/file.txt', value);
  expect('getObject after putObject', await om.getObject('npm-bucket', 'dir/file.txt'), value);
  const listing = await om.listObjects('npm-bucket', { delimiter: '/' });
  expect('listObjects with a delimiter', [listing.CommonPrefixes, listing.IsTruncated], [['dir/'], false]);
  checked.push('offline ObjectMetadata: createBucket, putObject, getObject, listObjects');

  // Errors carry their stable code.
  let code = null;
  try {
    rowkit.decodeKey('nope', 'x');
  } catch (e) {
    code = e.code;
  }
  expect('decodeKey with an unknown schema throws', code, 'invalid_argument');
  checked.push('an error with its code');
  return checked;
}

/**
 * The names a module object exports, sorted, without the loader's (`default`, `initSync`) and
 * the name newer Node versions give a CommonJS module's whole exports (`module.exports`).
 */
export const exportedNames = (module) =>
  Object.keys(module)
    .filter((n) => !['default', 'initSync', 'module.exports'].includes(n))
    .sort();
