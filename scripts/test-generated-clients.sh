#!/usr/bin/env bash
# Generates clients from openapi.yaml, unchanged, with generators the project does not use itself,
# as a third party would, and plays and verifies whole games with each against a real rpsd:
#
# - openapi-python-client (pinned with its runtime and cryptography in
#   clients/python/requirements.txt, in a venv under .tools/), driven by clients/python/play_game.py;
# - openapi-generator's typescript-fetch (the pinned openapi-generator-cli jar, fetched from Maven
#   Central with mvn into .tools/), compiled with the TypeScript of package-lock.json together with
#   clients/typescript/play_game.ts.
#
# openapi-generator's `validate --recommend` and its python and kotlin generators run too, for
# what they say about the contract. Every warning a generator prints must be one of those README's
# "Generated clients" lists, each with why; anything else fails the test. The clients are test
# code, generated into clients/.build/ on each run.
set -euo pipefail
cd "$(dirname "$0")/.."

generator_version=7.20.0
generator_sha256=871e0155287a87b579ff31096b2d45b1f95a115edfe631411ec6cff4848d0f03
jar=.tools/openapi-generator-cli-$generator_version.jar
if ! echo "$generator_sha256  $jar" | sha256sum -c --status 2>/dev/null; then
  mkdir -p .tools
  mvn -B --no-transfer-progress -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="org.openapitools:openapi-generator-cli:$generator_version" -DoutputDirectory=.tools
  echo "$generator_sha256  $jar" | sha256sum -c --status || { echo "test-generated-clients: $jar: unexpected checksum" >&2; exit 1; }
fi

requirements=clients/python/requirements.txt
venv=.tools/generated-clients
if [ ! -x "$venv/bin/openapi-python-client" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian's python3 comes without venv.
    [ "$(id -u)" -eq 0 ] || { echo "test-generated-clients: python3 -m venv fails (apt-get install python3-venv)" >&2; exit 1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

stamp=node_modules/.package-lock.json
if [ ! -x node_modules/.bin/tsc ] || [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

build=clients/.build
rm -rf "$build"
mkdir -p "$build/ts"
start=$(date +%s)

# The warnings each generator may print, as README's "Generated clients" explains them.
known_java_warnings='ExamplesUtils - No application/json content media type found in response\.|ModelUtils - Failed to get the schema name: null$|AbstractPythonCodegen - Codegen property is null \(e\.g\. map/dict of undefined type\)\. Default to typing\.Any\.$'
unexpected=0
complain() {
  echo "test-generated-clients: $1 says something README does not explain:" >&2
  printf '%s\n' "$2" >&2
  unexpected=1
}

# openapi-python-client (its post-generation ruff comes from the venv).
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/openapi-python-client" generate --path openapi.yaml --meta none \
  --output-path "$build/python/rps_client" >"$build/python.log" 2>&1 || { cat "$build/python.log" >&2; exit 1; }
# Its one known warning: no parsed body for GET /openapi.yaml, whose application/yaml it cannot read.
python3 - "$build/python.log" <<'EOF' || unexpected=1
import re, sys
log = open(sys.argv[1]).read()
known = re.compile(r"WARNING parsing GET /openapi\.yaml within operations\.\n\nCannot parse response for status code .*\(Unsupported content_type application/yaml\), response will be omitted from generated client\n\n\{.*?\n\}\n", re.S)
rest = known.sub("", log, count=1)
if known.search(log) is None or re.search(r"(?i)warning parsing|cannot parse|unable to|error", rest):
    print("test-generated-clients: openapi-python-client says something README does not explain:\n" + log, file=sys.stderr)
    sys.exit(1)
EOF

# openapi-generator: the contract's recommendations, then three generators in one JVM.
validation=$(java -jar "$jar" validate -i openapi.yaml --recommend 2>&1)
# Its one known recommendation: SignedAction, the message a player signs, is sent by no operation.
unexplained=$(grep -v -e '^Validating spec (openapi\.yaml)$' -e '^Warnings: *$' -e $'^\t- Unused model: SignedAction$' \
  -e '^\[info\] Spec has 1 recommendation(s)\.$' -e '^$' <<<"$validation" || true)
grep -q '^No validation issues detected\.$' <<<"$validation" || { grep -q 'Unused model: SignedAction' <<<"$validation" && [ -z "$unexplained" ]; } ||
  complain "openapi-generator validate" "$validation"
for generator in typescript-fetch python kotlin; do
  printf 'generatorName: %s\ninputSpec: %s\noutputDir: %s\n' "$generator" "$PWD/openapi.yaml" "$PWD/$build/$generator" >"$build/$generator.yaml"
done
# ES modules for Node: the generated imports name their .js files.
printf 'additionalProperties:\n  importFileExtension: .js\n' >>"$build/typescript-fetch.yaml"
java -jar "$jar" batch --fail-fast "$build/typescript-fetch.yaml" "$build/python.yaml" "$build/kotlin.yaml" >"$build/openapi-generator.log" 2>&1 ||
  { cat "$build/openapi-generator.log" >&2; exit 1; }
others=$(grep -E '\] (WARN|ERROR) ' "$build/openapi-generator.log" | grep -Ev "$known_java_warnings" || true)
[ -z "$others" ] || complain "openapi-generator" "$others"
[ "$unexpected" -eq 0 ] || exit 1
echo "test-generated-clients: generated in $(( $(date +%s) - start )) s"

# The TypeScript client, compiled with the test that drives it.
cp -r "$build/typescript-fetch" "$build/ts/generated"
cp clients/typescript/play_game.ts "$build/ts/"
npx --no-install tsc --strict --skipLibCheck --target es2022 --lib es2022,dom,dom.iterable \
  --module nodenext --moduleResolution nodenext --outDir "$build/ts/out" "$build/ts/play_game.ts"

deadline_ms=1000
source scripts/lib/rpsd.sh
start_rpsd test-generated-clients "$deadline_ms"
"$venv/bin/python" clients/python/play_game.py "$url" "$admin_token" "$PWD/$build/python" "$deadline_ms" ||
  { grep '"level":"ERROR"' "$rpsd_log" | tail -20 >&2; exit 1; }
node "$build/ts/out/play_game.js" "$url" "$admin_token" "$deadline_ms" ||
  { grep '"level":"ERROR"' "$rpsd_log" | tail -20 >&2; exit 1; }
echo "test-generated-clients: $(( $(date +%s) - start )) s"
