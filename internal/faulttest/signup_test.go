package faulttest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestSignUpAfterALostAnswer: a sign-up whose answer was lost created the account, so its retry
// finds its key bound (409 key_taken, as a 20-minute run on the formation did, and stopped); the
// next try signs up with a new key and name, and returns that key.
func TestSignUpAfterALostAnswer(t *testing.T) {
	var mu sync.Mutex
	bound := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name      string `json:"name"`
			PublicKey string `json:"publicKey"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case bound[body.PublicKey]:
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"code":"key_taken","status":409}`))
		case len(bound) == 0:
			// The account is created, and the answer lost on its way.
			bound[body.PublicKey] = true
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			bound[body.PublicKey] = true
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"token":"t-` + body.Name + `"}`))
		}
	}))
	t.Cleanup(srv.Close)
	r := NewRun(Options{Seed: 1, URLs: func() []string { return []string{srv.URL} }})
	var created struct {
		Token string `json:"token"`
	}
	key, err := r.signUp(context.Background(), "p", &created)
	if err != nil {
		t.Fatalf("sign up: %v", err)
	}
	if created.Token != "t-p-1" || !bound[key.PublicKey()] || len(bound) != 2 {
		t.Errorf("signed up as %q with key %s, %d keys bound; want p-1 with the second key", created.Token, key.PublicKey(), len(bound))
	}
}
