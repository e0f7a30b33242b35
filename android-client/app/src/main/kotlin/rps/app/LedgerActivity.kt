package rps.app

import android.app.Activity
import android.os.Bundle
import android.view.View
import android.widget.ScrollView
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.withContext
import rps.client.KeyHistories
import rps.client.LedgerEntry
import rps.client.LedgerKind
import rps.client.LedgerSignature
import rps.client.LedgerSignatures

/**
 * The player's ledger (`GET /v1/me/ledger`), oldest first, a page at a time: why the money moved,
 * the amount (green in, red out), when, the memo of an operator's credit or debit and whether the
 * admin's signature of it checks against the admin's key log, and the balance after it (the
 * entries add up to the balance). An entry of a game opens its transcript.
 */
class LedgerActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp

    /** The sum of the entries shown so far: the balance after the last of them. */
    private var running = 0L

    /** The admins' signatures, checked against their key logs, each read once for the screen (off the main thread). */
    private val signatures by lazy {
        val account = app.account ?: error("no account")
        val b = app.backendOf(account)
        LedgerSignatures(KeyHistories(b.keys) { app.originOf(account.server, b) }, account.id)
    }

    internal val entries by lazy {
        PagedList<Pair<LedgerEntry, LedgerSignature?>>(this, scope, R.string.more_entries, R.string.no_entries, { after ->
            val page = app.backend().history.myLedger(after)
            withContext(Dispatchers.Default) { page.entries.map { it to signatures.check(it) } } to page.next
        }) { (entry, signature) -> card(entry, signature) }
    }

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.my_ledger)
        setContentView(
            ScrollView(this).apply {
                addView(
                    column()
                        .add(text(Type.TITLE).apply { setText(R.string.my_ledger) })
                        .add(entries.status)
                        .add(entries.list)
                        .add(entries.more),
                )
            },
        )
        entries.load()
    }

    private fun card(e: LedgerEntry, signature: LedgerSignature?): View {
        running += e.amount
        val open = e.gameId?.let { id -> { startActivity(TranscriptActivity.intent(this, id, null)) } }
        val amount = text(Type.HEADING).apply {
            text = signed(e.amount)
            setTextColor(
                color(
                    if (e.amount > 0) {
                        R.color.success
                    } else if (e.amount < 0) {
                        R.color.error
                    } else {
                        R.color.text
                    },
                ),
            )
        }
        return card(open)
            .add(spread(text(Type.HEADING).apply { text = getString(kindLabel(e.kind)) }, amount))
            .add(text(Type.LABEL, muted = true).apply { text = getString(R.string.ledger_facts, dateTime(e.atMs), running) })
            .apply { e.memo?.let { m -> add(text(Type.BODY).apply { text = getString(R.string.ledger_memo, m) }) } }
            .apply { signature?.let { add(signatureLine(it)) } }
            .spoken()
    }

    private fun signatureLine(s: LedgerSignature) = when (s) {
        is LedgerSignature.Signed -> text(Type.LABEL, muted = true).apply { text = getString(R.string.ledger_signed, s.keyId) }
        LedgerSignature.Unsigned -> text(Type.LABEL, muted = true).apply { text = getString(R.string.ledger_unsigned) }
        is LedgerSignature.Failed -> text(Type.LABEL).apply {
            text = getString(R.string.ledger_signature_fails, s.problem)
            setTextColor(color(R.color.error))
        }
    }

    private fun kindLabel(k: LedgerKind) = when (k) {
        LedgerKind.CREDIT -> R.string.kind_credit
        LedgerKind.DEBIT -> R.string.kind_debit
        LedgerKind.BET -> R.string.kind_bet
        LedgerKind.REFUND -> R.string.kind_refund
        LedgerKind.PAYOUT -> R.string.kind_payout
        LedgerKind.SPLIT -> R.string.kind_split
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
