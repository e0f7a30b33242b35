package rps.client

/**
 * What this device finds in its own account's key log that it did not do itself, as key
 * transparency clients watch their account's keys: each with the key event as evidence.
 */
sealed interface KeyAlert {
    val event: KeyEvent?

    /** The evidence, as `rpsverify` prints a key event. */
    val evidence: String

    /** A key this device did not add appeared on the account (signed by [signer], a key of the account). */
    data class UnknownKey(override val event: KeyEvent, val key: KeyRecord) : KeyAlert {
        override val evidence: String get() = event.evidence
    }

    /** The operator replaced the account's keys (a recovery): [retired] are the keys it retired, [key] the one it added. */
    data class Recovered(
        override val event: KeyEvent,
        val key: KeyRecord,
        val retired: List<String>,
        val admin: String?,
        val reason: String?,
    ) : KeyAlert {
        override val evidence: String get() = event.evidence
    }

    /** A key this device holds or added was retired by a key it does not hold. */
    data class KeyRetired(override val event: KeyEvent, val keyId: String, val signer: String?) : KeyAlert {
        override val evidence: String get() = event.evidence
    }

    /** The key log itself does not verify: a key changed without the signature of a key the account had, or a rewritten chain. */
    data class Broken(val broken: KeyLogBrokenException) : KeyAlert {
        override val event: KeyEvent? get() = broken.event
        override val evidence: String get() = listOfNotNull(broken.event?.evidence, broken.message).joinToString("\n")
    }
}

/** The account's keys as its verified log says, what the device holds, and what it did not do. */
data class KeyWatchReport(
    val history: KeyHistory?,
    /** The key this device signs with, as the log shows it (null: not on the account). */
    val deviceKey: KeyRecord?,
    val alerts: List<KeyAlert>,
    /** The recovery that gave this device its key, when the operator did: said plainly, not an alarm. */
    val ownRecovery: KeyEvent?,
)

/**
 * Reads [accountId]'s key log and reports every key event this device did not make. [known] is
 * what the device did itself: the ids of the keys it made or added (its own, and a second phone's
 * it vouched for). Events before the device's own key joined the account are its history, not news.
 */
class KeyWatch(private val keys: KeysApi, private val accountId: String, private val origin: suspend () -> String) {
    suspend fun check(deviceKeyId: String, known: Set<String>): KeyWatchReport {
        val events = keys.keyLog(accountId)
        val history = try {
            KeyHistory.verify(accountId, origin(), events)
        } catch (e: KeyLogBrokenException) {
            return KeyWatchReport(null, null, listOf(KeyAlert.Broken(e)), null)
        }
        return report(history, deviceKeyId, known)
    }

    companion object {
        /** Pure: the alerts of a verified [history] for a device holding [deviceKeyId] that did [known]. */
        fun report(history: KeyHistory, deviceKeyId: String, known: Set<String>): KeyWatchReport {
            val mine = known + deviceKeyId
            val own = history.key(deviceKeyId)
            val since = own?.addedSeq ?: return KeyWatchReport(history, null, emptyList(), null)
            val alerts = ArrayList<KeyAlert>()
            var ownRecovery: KeyEvent? = null
            for (e in history.events.filter { it.seq >= since }) {
                val keyId = e.str("keyId") ?: continue
                when (e.type) {
                    KeyEvent.KEY_ADDED -> if (keyId !in mine) alerts += KeyAlert.UnknownKey(e, history.key(keyId)!!)
                    KeyEvent.KEY_RETIRED -> if (keyId in mine &&
                        e.str("signer") !in mine
                    ) {
                        alerts += KeyAlert.KeyRetired(e, keyId, e.str("signer"))
                    }
                    KeyEvent.KEYS_RECOVERED -> if (keyId == deviceKeyId) {
                        ownRecovery = e
                    } else {
                        val retired = (e.data["retired"] as? kotlinx.serialization.json.JsonArray)?.map {
                            (it as kotlinx.serialization.json.JsonPrimitive).content
                        }.orEmpty()
                        alerts += KeyAlert.Recovered(e, history.key(keyId)!!, retired, e.str("admin"), e.str("reason"))
                    }
                }
            }
            return KeyWatchReport(history, history.key(deviceKeyId), alerts, ownRecovery)
        }
    }
}
