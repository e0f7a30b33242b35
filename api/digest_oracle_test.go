package api_test

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// TestMovesDigestIsNoOfflineOracle is the attack of issue 29 as a test. In a 3-player game the
// attacker holds two accounts (Rock and Paper), so it knows every commitment of the round but
// the honest player's (Scissors, with a 3-digit PIN for a password). During the reveal stage it
// tries every move and PIN against moves_closed's digest, unsalted and salted with every 64-hex
// value it can read anywhere (the log, the lobby as each of its accounts, the game, its players
// and the round's transcript), and must not find the honest reveal: it would then reveal only
// the seat that wins. Once the round is over, the same search with the salt it reveals finds
// the reveal at once: the search is sound, and the salt is all it lacked.
func TestMovesDigestIsNoOfflineOracle(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	rock, paper, honest := e.NewPlayer("mallory-rock", 100), e.NewPlayer("mallory-paper", 100), e.NewPlayer("honest", 100)
	l := e.CreateLobby(map[string]any{"betSize": 50, "playersCountLimit": 3, "moveTimeoutMs": 60_000, "revealTimeoutMs": 60_000})
	lobby, game := l.Id.String(), l.Game.Id.String()
	for _, p := range []apitest.Player{rock, paper, honest} {
		e.Register(lobby, p).Want(t, http.StatusCreated)
	}
	const rockReveal, paperReveal, honestReveal = "0mallory-rock-pw", "1mallory-paper-pw", "2734"
	e.Commit(lobby, rock, rockReveal).Want(t, http.StatusOK)
	e.Commit(lobby, paper, paperReveal).Want(t, http.StatusOK)
	e.Commit(lobby, honest, honestReveal).Want(t, http.StatusOK)
	if stage := e.Lobby(lobby, "").Game.Stage; stage != api.StageReveal {
		t.Fatalf("after every commit the game is in %s", stage)
	}

	closed, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("moves_closed"))
	digest, _ := apitest.EventData(t, closed)["digest"].(string)
	known := map[string]string{rock.ID: apitest.CommitmentOf(rockReveal), paper.ID: apitest.CommitmentOf(paperReveal)}
	ids := []string{rock.ID, paper.ID, honest.ID}
	slices.Sort(ids) // the digest's order
	// search tries the guesses against the digest with each salt (nil: unsalted), computing it as
	// the contract specifies, and returns the reveal that matches and how many tries it made.
	search := func(salts []*tournament.Salt) (string, int) {
		tried := 0
		values := maps.Clone(known)
		for move := range 5 {
			for pin := range 1000 {
				guess := fmt.Sprintf("%d%03d", move, pin)
				values[honest.ID] = apitest.CommitmentOf(guess)
				// The canonical array: ids and values are plain ASCII, which needs no escaping.
				array := []byte("[")
				for i, id := range ids {
					if i > 0 {
						array = append(array, ',')
					}
					array = fmt.Appendf(array, `{"player":%q,"value":%q}`, id, values[id])
				}
				array = append(array, ']')
				for _, salt := range salts {
					tried++
					input := array
					if salt != nil {
						input = append(salt[:len(salt):len(salt)], array...)
					}
					if sum := blake2b.Sum256(input); hex.EncodeToString(sum[:]) == digest {
						return guess, tried
					}
				}
			}
		}
		return "", tried
	}

	// Everything the attacker can read during the reveal stage, as anyone and as its accounts.
	hex64 := regexp.MustCompile(`[0-9a-f]{64}`)
	seen := map[string]bool{}
	for _, token := range []string{"", rock.Token, paper.Token} {
		for _, path := range []string{
			"/v1/lobbies/" + lobby + "/events?limit=1000",
			"/v1/lobbies/" + lobby,
			"/v1/games/" + game,
			"/v1/games/" + game + "/players",
			"/v1/games/" + game + "/rounds/1",
		} {
			for _, h := range hex64.FindAllString(string(e.Do("GET", path, token, nil).Want(t, http.StatusOK).Body), -1) {
				seen[h] = true
			}
		}
	}
	candidates := []*tournament.Salt{nil}
	for h := range seen {
		if s, err := tournament.ParseSalt(h); err == nil {
			candidates = append(candidates, &s)
		}
	}
	start := time.Now()
	if found, tried := search(candidates); found != "" {
		t.Fatalf("during the reveal stage, moves_closed's digest %s gave the honest reveal %q away in %d offline tries (%v)", digest, found, tried, time.Since(start))
	} else {
		t.Logf("reveal stage: %d tries (5,000 guesses, unsalted and with %d candidate salts, %v) found nothing", tried, len(candidates)-1, time.Since(start))
	}

	// The round resolves: the commitments are public, and so is the salt.
	e.Reveal(lobby, rock, rockReveal).Want(t, http.StatusOK)
	e.Reveal(lobby, paper, paperReveal).Want(t, http.StatusOK)
	e.Reveal(lobby, honest, honestReveal).Want(t, http.StatusOK)
	resolved, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("round_resolved"))
	salt, err := tournament.ParseSalt(fmt.Sprint(apitest.EventData(t, resolved)["salt"]))
	if err != nil {
		t.Fatalf("round_resolved reveals no salt: %v", err)
	}
	var rnd api.RoundTranscript
	e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &rnd)
	if rnd.Salt == nil || *rnd.Salt != salt.String() {
		t.Errorf("the transcript's salt %v, round_resolved's %s", rnd.Salt, salt)
	}
	if found, _ := search([]*tournament.Salt{&salt}); found != honestReveal {
		t.Errorf("with the revealed salt the search finds %q, want %q: the digest is not blake2b-256(salt || array)", found, honestReveal)
	}
}
