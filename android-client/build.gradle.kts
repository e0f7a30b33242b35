// For Android Studio users (not exercised here; the tested build is Maven, see README.md).
// The root project declares the plugins; core/ and app/ apply them.
plugins {
    id("com.android.application") version "8.7.3" apply false
    id("org.jetbrains.kotlin.android") version "2.1.21" apply false
    id("org.jetbrains.kotlin.jvm") version "2.1.21" apply false
    id("org.jetbrains.kotlin.plugin.serialization") version "2.1.21" apply false
    id("org.openapi.generator") version "7.17.0" apply false
}
