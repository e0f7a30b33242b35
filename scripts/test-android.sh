#!/usr/bin/env bash
# Builds and tests the Android client (android-client/): generates the API client from openapi.yaml,
# runs the core library's unit tests, compiles the app module against android-all, drives its
# screens with Robolectric (screenshots in android-client/app/target/screenshots, compared with the
# goldens), builds and checks the APK (scripts/build-apk.sh), and - when the
# server can be built here (cmd/rpsd) or RPS_E2E_SERVER_CMD names one - the end-to-end tests
# against a real rpsd with a throwaway database (Maven profile e2e).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in mvn java; do
  command -v "$tool" >/dev/null || { echo "test-android: '$tool' is not installed (need Java 17 and Maven 3.8+)" >&2; exit 1; }
done

profiles=()
if [ -n "${RPS_E2E_SERVER_CMD:-}" ] || { [ -d cmd/rpsd ] && command -v go >/dev/null; }; then
  profiles=(-Pe2e)
else
  echo "test-android: no rpsd to test against (no cmd/rpsd with go, no RPS_E2E_SERVER_CMD): end-to-end tests skipped"
fi

# aapt links the app's resources during the Maven build.
bash scripts/ensure-android-tools.sh
mvn -B --no-transfer-progress -f android-client/pom.xml "${profiles[@]}" verify
bash scripts/build-apk.sh --no-maven
