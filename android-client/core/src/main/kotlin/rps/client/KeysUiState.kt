package rps.client

/** What the keys screen knows: this device's key for the account, the last watch of its key log, and the last outcome of an action. */
data class KeysSnapshot(
    /** This device's key for the account; null: it has none. */
    val deviceKey: PlayerKey? = null,
    /** Whether that key never leaves the Android Keystore (else: sealed by a Keystore key). */
    val inKeystore: Boolean = false,
    val report: KeyWatchReport? = null,
    /** The last read of the key log failed (and no report is kept). */
    val readFailure: RpsException? = null,
    /** A request is on its way: the buttons wait. */
    val busy: Boolean = false,
    val outcome: KeysOutcome? = null,
    /** The key the player asked to retire, waiting for the confirmation (or being retired). */
    val confirmingRetire: String? = null,
)

/** What the player's last action on the screen did. */
sealed interface KeysOutcome {
    data object KeyBound : KeysOutcome
    data class PhoneAdded(val keyId: String) : KeysOutcome
    data class KeyRetired(val keyId: String) : KeysOutcome
    data object NotAKey : KeysOutcome
    data class Failed(val error: RpsException) : KeysOutcome
}

/**
 * One line of the account's keys; [retirable]: this phone offers to retire it (any active key but
 * its own, which signs the retirement, and only while its own is active).
 */
data class KeyLine(val keyId: String, val at: String, val kind: Kind, val retirable: Boolean = false) {
    enum class Kind { THIS_PHONE, ACTIVE, RETIRED, RECOVERY }
}

/** The keys screen, a pure function of [KeysSnapshot] ([keysUiStateOf]), as [GameUiState] is of the game's. */
sealed interface KeysUiState {
    val busy: Boolean
    val outcome: KeysOutcome?

    data class Checking(override val busy: Boolean, override val outcome: KeysOutcome?) : KeysUiState

    data class Unreachable(val error: RpsException, override val busy: Boolean, override val outcome: KeysOutcome?) : KeysUiState

    /** The key log does not verify: only the red notice and its evidence. */
    data class Broken(val alert: KeyAlert.Broken, override val busy: Boolean, override val outcome: KeysOutcome?) : KeysUiState

    /** This device has no key for the account; [firstKey]: the account has none either, so it binds this one itself. */
    data class NoKey(val firstKey: Boolean, override val busy: Boolean, override val outcome: KeysOutcome?) : KeysUiState

    /** This device made its key, which the account does not have yet: another phone of the account adds it (the QR code). */
    data class AwaitingOtherPhone(
        val keyId: String,
        val publicKey: String,
        override val busy: Boolean,
        override val outcome: KeysOutcome?,
    ) : KeysUiState

    /** This device signs with [deviceKeyId]; [notices] say the key events it did not make, each with its evidence. */
    data class Keys(
        val deviceKeyId: String,
        val inKeystore: Boolean,
        val lines: List<KeyLine>,
        val notices: List<KeyNotice>,
        /** The operator's recovery that gave this device its key, said plainly. */
        val ownRecovery: KeyEvent?,
        /** The line of the key the player asked to retire, while it waits for the confirmation; only ever a [KeyLine.retirable] one. */
        val confirmRetire: KeyLine?,
        override val busy: Boolean,
        override val outcome: KeysOutcome?,
    ) : KeysUiState {
        /** Every key event this device did not make, open or settled: the evidence. */
        val alerts: List<KeyAlert> get() = notices.map { it.alert }
    }
}

/** How the keys screen says one key event this device did not make ([KeyAlert]). */
sealed interface KeyNotice {
    val alert: KeyAlert

    /** Still a danger: the red notice. */
    data class Alarm(override val alert: KeyAlert) : KeyNotice

    /**
     * A key this device did not add, retired since ([retiredAt], by [retiredBy]): nobody can act
     * with it any more. The evidence that it appeared stays, said plainly, not as an alarm.
     */
    data class RetiredUnknownKey(override val alert: KeyAlert.UnknownKey, val retiredAt: String, val retiredBy: RetiredBy) : KeyNotice

    sealed interface RetiredBy {
        data object ThisPhone : RetiredBy

        /** Another key of the account signed the retirement. */
        data class OtherKey(val keyId: String) : RetiredBy

        /** The operator's recovery retired it (the recovery is a notice of its own). */
        data object Operator : RetiredBy
    }
}

fun keysUiStateOf(s: KeysSnapshot): KeysUiState {
    val r = s.report
    return when {
        r == null && s.readFailure != null -> KeysUiState.Unreachable(s.readFailure, s.busy, s.outcome)
        r == null -> KeysUiState.Checking(s.busy, s.outcome)
        r.history == null -> KeysUiState.Broken(r.alerts.filterIsInstance<KeyAlert.Broken>().first(), s.busy, s.outcome)
        s.deviceKey == null -> KeysUiState.NoKey(r.history.keys.isEmpty(), s.busy, s.outcome)
        r.deviceKey == null -> KeysUiState.AwaitingOtherPhone(s.deviceKey.keyId, s.deviceKey.publicKeyHex, s.busy, s.outcome)
        else -> {
            // Retiring is signed by this phone's key: with its own retired (a recovery) it offers nothing; retiring
            // its own here would leave it unable to sign.
            val canSign = r.deviceKey.active
            val lines = r.history.keys.map { k ->
                when {
                    !k.active -> KeyLine(k.keyId, k.retiredAt!!, KeyLine.Kind.RETIRED)
                    k.keyId == r.deviceKey.keyId -> KeyLine(k.keyId, k.addedAt, KeyLine.Kind.THIS_PHONE)
                    k.recovery -> KeyLine(k.keyId, k.addedAt, KeyLine.Kind.RECOVERY, retirable = canSign)
                    else -> KeyLine(k.keyId, k.addedAt, KeyLine.Kind.ACTIVE, retirable = canSign)
                }
            }.sortedBy { it.kind == KeyLine.Kind.RETIRED }
            KeysUiState.Keys(
                r.deviceKey.keyId,
                s.inKeystore,
                lines,
                r.alerts.map { noticeOf(it, r.history, r.deviceKey.keyId) },
                r.ownRecovery,
                // A key retired meanwhile (by another phone, or this request) is no longer confirmed.
                lines.firstOrNull { it.keyId == s.confirmingRetire && it.retirable },
                s.busy,
                s.outcome,
            )
        }
    }
}

/** [a] as the screen says it: a key this device did not add is no longer an alarm once the log shows it retired. */
private fun noticeOf(a: KeyAlert, history: KeyHistory, deviceKeyId: String): KeyNotice {
    if (a !is KeyAlert.UnknownKey) return KeyNotice.Alarm(a)
    // The alert's record is the verified history's, as it stands now: retired or not.
    val retirement = a.key.retiredSeq?.let { seq -> history.events.first { it.seq == seq } } ?: return KeyNotice.Alarm(a)
    // A verified key_retired always names the key that signed it; a recovery has none.
    val signer = retirement.str("signer").orEmpty()
    val by = when {
        retirement.type == KeyEvent.KEYS_RECOVERED -> KeyNotice.RetiredBy.Operator
        signer == deviceKeyId -> KeyNotice.RetiredBy.ThisPhone
        else -> KeyNotice.RetiredBy.OtherKey(signer)
    }
    return KeyNotice.RetiredUnknownKey(a, retirement.at, by)
}

/** How much the account's keys call for the player, said on the keys screen and, in one line, on the account screen. */
enum class KeysAttention {
    /** Nothing this phone did not do (or not read yet). */
    NONE,

    /** Only keys this phone did not add that are retired since ([KeyNotice.RetiredUnknownKey]): no danger now, the evidence kept. */
    SETTLED,

    /** The key log does not verify, or a key event this phone did not make is still a danger ([KeyNotice.Alarm]). */
    ALARM,
}

/** The one rule both screens alarm by: a notice is an alarm or settled as [keysUiStateOf] decided it. */
val KeysUiState.attention: KeysAttention
    get() = when {
        this is KeysUiState.Broken -> KeysAttention.ALARM
        this !is KeysUiState.Keys || notices.isEmpty() -> KeysAttention.NONE
        notices.any { it is KeyNotice.Alarm } -> KeysAttention.ALARM
        else -> KeysAttention.SETTLED
    }
