package tournament

import "testing"

// BenchmarkActionVerify is the CPU a server spends on one player's signature: the action's
// message rebuilt (RFC 8785) and its Ed25519 signature verified, with the key id checked (a
// blake2b of the key), as ActionMessage.Verify does for every signed action. bench reports it
// beside rpsd's CPU per action.
func BenchmarkActionVerify(b *testing.B) {
	priv, pub := seedKey(b, rfc8032Seed1)
	m := vectorMessages(KeyID(pub))[5] // a commit: every member of the message but the payload's is set
	if m.Action != ActionCommit {
		b.Fatalf("vector 5 is %s, not a commit", m.Action)
	}
	sig, err := m.Sign(priv)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !m.Verify(pub, sig) {
			b.Fatal("the signature does not verify")
		}
	}
}
