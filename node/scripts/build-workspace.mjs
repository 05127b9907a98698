// Builds the addon in the workspace's own target folder, the way `cargo build` at the root does,
// and writes what `napi build` writes: the `.node` file, native.js and native.d.ts.
//
// Why not `napi build` (`npm run build`)? It always passes `--target <host triple>`, which puts
// the build in target/<triple>/ and compiles every dependency again (proc macros included):
// half an hour on a small machine where the root's `cargo test` has just built them all. This
// script runs the same cargo build without `--target`, so `.ci/run` reuses those artifacts
// (with `--features root-test-features`, see Cargo.toml), then asks the pinned @napi-rs/cli for
// the type definitions and the loader, exactly as `napi build` would.
//
// Usage: node scripts/build-workspace.mjs [--features F] [--release]
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateTypeDef, writeJsBinding } from '@napi-rs/cli';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
const release = args.includes('--release');
const features = args.includes('--features') ? ['--features', args[args.indexOf('--features') + 1]] : [];

const metadata = JSON.parse(
  execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: here, encoding: 'utf8' }),
);
const target = metadata.target_directory;
const typeDefDir = join(target, 'napi-rs', 'skillcache-node-typedef');
rmSync(typeDefDir, { recursive: true, force: true });
mkdirSync(typeDefDir, { recursive: true });

execFileSync('cargo', ['build', '-p', 'skillcache-node', ...(release ? ['--release'] : []), ...features], {
  cwd: here,
  stdio: 'inherit',
  env: {
    ...process.env,
    // napi-derive writes each exported item's type into this folder while it expands the
    // macros; changing NAPI_FORCE_BUILD_* reruns the build script, so the crate is expanded anew.
    NAPI_TYPE_DEF_TMP_FOLDER: typeDefDir,
    NAPI_FORCE_BUILD_SKILLCACHE_NODE: String(Date.now()),
  },
});

const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const binaryName = pkg.napi.binaryName;
// `napi.dtsHeader`: native.d.ts imports the report types it names from reports.d.ts.
const { exports, dts } = await generateTypeDef({ typeDefDir, cwd: here, configDtsHeader: pkg.napi.dtsHeader });
writeFileSync(join(here, 'native.d.ts'), dts);
await writeJsBinding({
  platform: true,
  idents: exports,
  jsBinding: 'native.js',
  binaryName,
  packageName: pkg.name,
  version: pkg.version,
  outputDir: here,
});

// The loader looks for `<binaryName>.<platform>-<arch>[-<abi>].node` beside it.
const abi = process.platform === 'linux' ? (process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl') : '';
const suffix = { linux: 'so', darwin: 'dylib', win32: 'dll' }[process.platform];
const lib = process.platform === 'win32' ? 'skillcache_node' : 'libskillcache_node';
copyFileSync(
  join(target, release ? 'release' : 'debug', `${lib}.${suffix}`),
  join(here, `${binaryName}.${process.platform}-${process.arch}${abi}.node`),
);
