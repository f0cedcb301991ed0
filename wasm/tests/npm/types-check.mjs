// The package's public types, read with the TypeScript compiler the way a user's `tsc` reads
// them (types.mts imports "rowkit" from the installed package): types.mts must compile under
// --strict; no declaration of anything the package exports may say `any`; no wasm-bindgen
// loader internal may be exported; every type wasm/src declares (the generated
// www/pkg/rowkit.d.ts's own exports) must be exported. Writes the value exports' names (sorted)
// to EXPORTS_JSON for the runtime checks. Usage: node types-check.mjs TYPES_MTS EXPORTS_JSON
import fs from 'node:fs';
import ts from 'typescript';

const [file, exportsFile] = process.argv.slice(2);
const fail = (what) => { console.error(`types: ${what}`); process.exit(1); };
const program = ts.createProgram([file], {
  strict: true,
  noEmit: true,
  // The generated classes declare `[Symbol.dispose]` (lib esnext, or a user's skipLibCheck).
  target: ts.ScriptTarget.ESNext,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  noUnusedLocals: false,
});
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length) {
  fail(ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f, getCurrentDirectory: () => process.cwd(), getNewLine: () => '\n',
  }));
}
console.log('types: ok: types.mts compiles with --strict (every @ts-expect-error is an error)');

const checker = program.getTypeChecker();
const moduleOf = (specifier) => checker.getSymbolAtLocation(specifier);
const user = program.getSourceFile(file);
const rowkitImport = user.statements.find((s) => ts.isImportDeclaration(s) && s.moduleSpecifier.text === 'rowkit');
const publicModule = moduleOf(rowkitImport.moduleSpecifier);
const exported = checker.getExportsOfModule(publicModule);
const target = (s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);

const anys = [];
for (const symbol of exported) {
  for (const decl of target(symbol).declarations ?? []) {
    (function walk(node) {
      if (node.kind === ts.SyntaxKind.AnyKeyword) {
        const { line } = node.getSourceFile().getLineAndCharacterOfPosition(node.getStart());
        anys.push(`${symbol.name} (${node.getSourceFile().fileName}:${line + 1})`);
      }
      ts.forEachChild(node, walk);
    })(decl);
  }
}
if (anys.length) fail(`\`any\` in the public types: ${anys.join(', ')}`);

const names = exported.map((s) => s.name);
const internal = names.filter((n) => /^(InitInput|InitOutput|SyncInitInput|initSync|__wbg|IntoUnderlying|ReadableStreamType)/.test(n));
if (internal.length) fail(`wasm-bindgen internals exported: ${internal.join(', ')}`);

// The generated module's own exports: every one not a loader internal must be public.
const generated = program.getSourceFiles().find((f) => f.fileName.endsWith('/www/pkg/rowkit.d.ts'));
if (!generated) fail('www/pkg/rowkit.d.ts was not reached from the package types');
const missing = checker.getExportsOfModule(checker.getSymbolAtLocation(generated))
  .map((s) => s.name)
  .filter((n) => n !== 'default' && !/^(InitInput|InitOutput|SyncInitInput|initSync|ReadableStreamType|IntoUnderlying)/.test(n))
  .filter((n) => !names.includes(n));
if (missing.length) fail(`declared in wasm/src but not exported by rowkit.d.ts: ${missing.join(', ')}`);
console.log(`types: ok: ${names.length} exports, none \`any\`, no wasm-bindgen internals, every declared type exported`);

const values = exported
  .filter((s) => s.name !== 'default' && target(s).flags & ts.SymbolFlags.Value)
  .map((s) => s.name)
  .sort();
fs.writeFileSync(exportsFile, JSON.stringify(values));
