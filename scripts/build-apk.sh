#!/usr/bin/env bash
# Builds android-client/app/target/rps.apk without an Android SDK and checks it:
#   Maven compiles the app and copies its runtime jars, R8 (com.android.tools:r8), the SDK 34
#   framework jar and the API 23 one the app compiles against into app/target/apk/, and links the
#   manifest and resources with aapt against the framework's resources.arsc
#   (app/target/resources.ap_, the APK's base); R8 shrinks the app and its jars into dex (min API
#   23) with app/proguard-rules.pro, keep rules for every class the linked manifest names and the
#   rules the jars ship; the service files R8 adapted to its renamed classes are added; zipalign,
#   then apksigner with a debug key generated on first use ($RPS_APK_KEYSTORE, default
#   ~/.android/debug.keystore, never in the repository).
# Then `apksigner verify` must pass; `aapt dump badging` must show the launcher activity, min SDK
# 23 and exactly the permissions below; the dex must define every class the manifest and the
# service files name (R8 dropping one is the classic failure of a shrunk APK); and the APK must
# weigh at most 2.5 MB. Prints its size (`make apk`).
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
compile_sdk=$work/tools/android-api23.jar
apk=$target/rps.apk
rm -rf "$work/dex" "$work/r8" "$work/rules" "$work/res" "$work/unsigned.apk" "$work/aligned.apk" "$apk"
mkdir -p "$work/r8" "$work/rules" "$work/res"

app_jar=$(ls "$target"/app-*.jar | grep -v -- '-tests.jar' | head -n 1)
libs=("$app_jar" "$work"/libs/*.jar)

# The classes a linked manifest in APK $1 names, which the system instantiates by those names:
# the application, activities, services, receivers and providers (names written in full).
manifest_classes() {
  aapt dump xmltree "$1" AndroidManifest.xml | awk '
    /^ *E: / { element = $2 }
    /^ *A: android:name\(/ && element ~ /^(application|activity|activity-alias|service|receiver|provider)$/ {
      if (match($0, /"[^"]*"/)) print substr($0, RSTART + 1, RLENGTH - 2)
    }'
}

# 1. The manifest and the resources, as the Maven build linked them against the framework's
#    resources (target/resources.ap_: its ids are the ones compiled into the app's R class); R8
#    keeps the classes the manifest names.
cp "$target/resources.ap_" "$work/unsigned.apk"
manifest_classes "$work/unsigned.apk" | sed 's/.*/-keep class & { <init>(); }/' >"$work/rules/manifest.pro"

# 2. Dex, shrunk by R8 and desugared for API 23. The library is the API 23 framework the app
#    compiles against (R8 cannot read the SDK 34 jar's bundled internals); java.* comes from this
#    JDK. The libraries' own rules: R8's (META-INF/com.android.tools/r8*, not the ones for R8
#    before 3.0) when a jar has them, else its ProGuard ones (META-INF/proguard).
for jar in "${libs[@]}"; do
  dir=$work/rules/$(basename "$jar" .jar)
  if unzip -l "$jar" 'META-INF/com.android.tools/*' >/dev/null 2>&1; then
    unzip -q -o "$jar" 'META-INF/com.android.tools/r8/*' 'META-INF/com.android.tools/r8-from-*/*' -d "$dir" 2>/dev/null || true
  else
    unzip -q -o "$jar" 'META-INF/proguard/*' -d "$dir" 2>/dev/null || true
  fi
done
rules=(--pg-conf "$app/proguard-rules.pro")
while IFS= read -r -d '' f; do rules+=(--pg-conf "$f"); done < <(find "$work/rules" -name '*.pro' -print0 | sort -z)
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
java -Xmx2g -cp "$work/tools/r8.jar" com.android.tools.r8.R8 --release --min-api 23 \
  --lib "$compile_sdk" --lib "$java_home" "${rules[@]}" --pg-map-output "$work/mapping.txt" \
  --output "$work/r8" "${libs[@]}" 2> >(grep -v "^Warning: Resource 'META-INF/.*' already exists.$" >&2)

# 3. R8 writes the jars' Java resources next to the dex, the service files adapted to the classes
#    it renamed. Of those the app needs only the service files (coroutines find their Android main
#    dispatcher and exception pre-handler through ServiceLoader); the rest serves classes R8
#    dropped (Bouncy Castle's post-quantum tables, Kotlin metadata for kotlin-reflect, okhttp's
#    public suffix list for cookies, which the app does not use).
test -n "$(ls "$work/r8/META-INF/services" 2>/dev/null)" ||
  { echo "build-apk: R8 wrote no service files (coroutines' Android dispatcher)" >&2; exit 1; }
mkdir -p "$work/res/META-INF"
cp -r "$work/r8/META-INF/services" "$work/res/META-INF/"
(cd "$work/r8" && zip -q ../unsigned.apk classes*.dex)
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
verified=$(apksigner verify --min-sdk-version 23 "$apk" 2>&1) || { echo "$verified" >&2; echo "build-apk: apksigner verify failed" >&2; exit 1; }
grep -v 'META-INF/services/.* not protected by signature' <<<"$verified" >&2 || true
badging=$(aapt dump badging "$apk")
fail() { echo "build-apk: $1" >&2; exit 1; }
grep -q "^launchable-activity: name='rps.app.AccountActivity'" <<<"$badging" || fail "no launcher activity rps.app.AccountActivity"$'\n'"$badging"
grep -q "^sdkVersion:'23'" <<<"$badging" || fail "min SDK is not 23"$'\n'"$badging"
# INTERNET for the server; the game service (rps.app.GameService) runs in the foreground
# (FOREGROUND_SERVICE, and FOREGROUND_SERVICE_SPECIAL_USE for its type on Android 14+) and posts
# notifications (POST_NOTIFICATIONS, asked at run time on Android 13+). Nothing else.
expected="uses-permission: name='android.permission.FOREGROUND_SERVICE'
uses-permission: name='android.permission.FOREGROUND_SERVICE_SPECIAL_USE'
uses-permission: name='android.permission.INTERNET'
uses-permission: name='android.permission.POST_NOTIFICATIONS'"
permissions=$(grep "^uses-permission:" <<<"$badging" | LC_ALL=C sort -u)
[ "$permissions" = "$expected" ] || fail "the permissions are not INTERNET and the game service's:"$'\n'"$permissions"

# Every class the manifest names (application, activities, services...) and every service file's
# interface and implementations must be defined in the dex, under those very names.
defined=$(python3 scripts/apk-dex-classes.py "$apk" | LC_ALL=C sort -u)
named=$(manifest_classes "$apk")
services=$(cd "$work/res/META-INF/services" && for f in *; do echo "$f"; grep -v '^[[:space:]]*\(#.*\)\?$' "$f"; done)
missing=$(LC_ALL=C comm -23 <(printf '%s\n%s\n' "$named" "$services" | LC_ALL=C sort -u) <(echo "$defined"))
[ -z "$missing" ] || fail "R8 dropped or renamed classes the manifest or a service file names:"$'\n'"$missing"
for c in rps.app.AccountActivity rps.app.GameService; do
  grep -qx "$c" <<<"$named" || fail "the manifest does not name $c"
done

size=$(stat -c %s "$apk")
limit=$((2500 * 1000))
[ "$size" -le "$limit" ] || fail "$apk is $size bytes, more than the 2.5 MB allowed"
echo "build-apk: $apk: $size bytes ($(awk -v b="$size" 'BEGIN { printf "%.2f", b / 1000000 }') MB, at most 2.5) signed, verified;" \
  "launcher rps.app.AccountActivity, min SDK 23, INTERNET and the game service's permissions; the dex defines the" \
  "$(wc -l <<<"$named") classes the manifest names and the service files' $(wc -l <<<"$services")"
