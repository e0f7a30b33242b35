// The committed copies of the browser libraries must equal node_modules (pinned by
// package-lock.json), as generated Go code must equal its generator's output.
// Fix a failure with scripts/vendor-console.sh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const repo = new URL('../../', import.meta.url);
const sources = {
  'noble-hashes': 'node_modules/@noble/hashes/',
  'noble-curves': 'node_modules/@noble/curves/',
  canonicalize: 'node_modules/canonicalize/lib/',
  'qrcode-generator': 'node_modules/qrcode-generator/dist/',
};
const licenses = { canonicalize: 'node_modules/canonicalize/LICENSE' };

// The one change scripts/vendor-console.sh makes: @noble/curves' imports of '@noble/hashes/...'
// name the vendored copy, since a browser resolves no bare specifier without an import map.
function vendored(dir, name, bytes) {
  if (dir !== 'noble-curves' || !name.endsWith('.js')) return bytes;
  const up = '../'.repeat(name.split('/').length - 1);
  return Buffer.from(bytes.toString('utf8').replaceAll("'@noble/hashes/", `'../${up}noble-hashes/`));
}

test('console/assets/vendor equals node_modules', () => {
  for (const [dir, source] of Object.entries(sources)) {
    const copied = readdirSync(new URL(`console/assets/vendor/${dir}/`, repo), { recursive: true })
      .filter((name) => /\.(js|mjs)$|LICENSE$/.test(name));
    assert.ok(copied.length > 0, `${dir} is empty`);
    for (const name of copied) {
      const from = name === 'LICENSE' && licenses[dir] ? licenses[dir] : source + name;
      assert.ok(
        readFileSync(new URL(`console/assets/vendor/${dir}/${name}`, repo)).equals(vendored(dir, name, readFileSync(new URL(from, repo)))),
        `console/assets/vendor/${dir}/${name} differs from ${from}: run scripts/vendor-console.sh`,
      );
    }
  }
});
