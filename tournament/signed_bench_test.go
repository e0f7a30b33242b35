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

// BenchmarkHeadSign is the CPU a server spends signing a lobby's head (api's signer), once per
// lobby and event, whoever follows it: its message built and Ed25519-signed. bench reports it
// beside the verification of a player's signature.
func BenchmarkHeadSign(b *testing.B) {
	priv, pub := seedKey(b, rfc8032Seed1)
	h := Head{LobbyID: "7a1b9f43-5d2e-4c8a-9b6f-0e3d2c1a4b5f", Seq: 1234, At: 1_764_000_000_000, KeyID: KeyID(pub)}
	h.Hash[0] = 0xab
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Sign(priv); err != nil {
			b.Fatal(err)
		}
	}
}
