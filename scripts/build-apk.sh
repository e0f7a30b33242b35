#!/usr/bin/env bash
# Builds android-client/app/target/rps.apk without an Android SDK and checks it:
#   Maven compiles the app and copies its runtime jars, D8 (com.android.tools:r8) and the SDK 34
#   framework jar into app/target/apk/, and links the manifest and resources with aapt against
#   the framework's resources.arsc (app/target/resources.ap_, the APK's base); D8 turns the jars into dex (min API 23); the jars' Java resources
#   (META-INF/services - coroutines' Android dispatcher is found through ServiceLoader - okhttp's
#   public suffix list...) are added; zipalign, then apksigner with a debug key generated on first
#   use ($RPS_APK_KEYSTORE, default ~/.android/debug.keystore, never in the repository).
# Then `apksigner verify` must pass and `aapt dump badging` must show the launcher activity, min
# SDK 23 and the INTERNET permission alone.
# --no-maven: reuse what a `mvn verify` of android-client just left in app/target (make test).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-android-tools.sh
if [ "${1:-}" != "--no-maven" ]; then
  mvn -B --no-transfer-progress -q -f android-client/pom.xml -pl app -am -DskipTests package
fi

app=android-client/app
target=$app/target
work=$target/apk
framework=$work/tools/android-framework.jar
apk=$target/rps.apk
rm -rf "$work/dex" "$work/res" "$work/unsigned.apk" "$work/aligned.apk" "$apk"
mkdir -p "$work/dex" "$work/res"

app_jar=$(ls "$target"/app-*.jar | grep -v -- '-tests.jar' | head -n 1)
libs=("$app_jar" "$work"/libs/*.jar)

# 1. The manifest and the resources, as the Maven build linked them against the framework's
#    resources (target/resources.ap_: its ids are the ones compiled into the app's R class).
cp "$target/resources.ap_" "$work/unsigned.apk"

# 2. Dex, desugared for API 23. The framework jar has android.* only: java.* comes from this JDK.
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
java -cp "$work/tools/r8.jar" com.android.tools.r8.D8 --release --min-api 23 \
  --lib "$framework" --lib "$java_home" --output "$work/dex" "${libs[@]}"

# 3. Java resources of the jars (okhttp's public suffix list...) and their META-INF/services; the
#    rest of META-INF (signatures, manifests, Kotlin metadata, shrinker rules) stays out.
for jar in "${libs[@]}"; do
  unzip -q -o "$jar" -d "$work/res" -x '*.class' '*.kotlin_metadata' 'META-INF/*' '*/' 2>/dev/null || true
  unzip -q -o "$jar" 'META-INF/services/*' -d "$work/res" 2>/dev/null || true
done
test -f "$work/res/META-INF/services/kotlinx.coroutines.internal.MainDispatcherFactory" ||
  { echo "build-apk: coroutines' Android dispatcher service file is missing" >&2; exit 1; }
(cd "$work/dex" && zip -q -r ../unsigned.apk .)
(cd "$work/res" && zip -q -r ../unsigned.apk .)

# 4. Align, sign.
zipalign -f -p 4 "$work/unsigned.apk" "$work/aligned.apk"
keystore=${RPS_APK_KEYSTORE:-$HOME/.android/debug.keystore}
if [ ! -f "$keystore" ]; then
  mkdir -p "$(dirname "$keystore")"
  keytool -genkeypair -noprompt -keystore "$keystore" -storetype PKCS12 -storepass android -keypass android \
    -alias androiddebugkey -dname "CN=Android Debug,O=Android,C=US" -keyalg RSA -keysize 2048 -validity 10000 >/dev/null 2>&1
fi
apksigner sign --ks "$keystore" --ks-pass pass:android --key-pass pass:android --ks-key-alias androiddebugkey \
  --min-sdk-version 23 --out "$apk" "$work/aligned.apk"
rm -f "$apk.idsig"

# 5. Check.
# (v1 signatures never cover META-INF/, so apksigner warns about the service files: expected.)
apksigner verify --min-sdk-version 23 "$apk" 2> >(grep -v 'META-INF/services/.* not protected by signature' >&2)
badging=$(aapt dump badging "$apk")
fail() { echo "build-apk: $1" >&2; echo "$badging" >&2; exit 1; }
grep -q "^launchable-activity: name='rps.app.AccountActivity'" <<<"$badging" || fail "no launcher activity rps.app.AccountActivity"
grep -q "^sdkVersion:'23'" <<<"$badging" || fail "min SDK is not 23"
permissions=$(grep "^uses-permission:" <<<"$badging" | sort -u)
[ "$permissions" = "uses-permission: name='android.permission.INTERNET'" ] || fail "permissions other than INTERNET alone: $permissions"
echo "build-apk: $apk ($(du -k "$apk" | cut -f1) KiB) signed, verified, launcher rps.app.AccountActivity, min SDK 23, INTERNET only"
