// For Android Studio users. Not exercised by this repository's build or CI, which use Maven
// (pom.xml) because the Android Gradle plugin and Google's repository are not reachable there.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}
dependencyResolutionManagement {
    repositories {
        google()
        mavenCentral()
    }
}
rootProject.name = "rps-android-client"
include(":core", ":app")
