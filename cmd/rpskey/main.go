// Command rpskey makes a player's Ed25519 key and signs the player's actions with it, for curl
// and other hand-made requests (issue 31: every player action is signed by the player's own key).
//
//	rpskey new FILE
//	rpskey sign --key FILE --origin O [--player ID] [--lobby ID --game ID] [--round N] [--idempotency-key K] ACTION [PAYLOAD FLAGS]
//
// new writes a fresh key's seed to FILE (mode 0600, never overwriting) and prints its public key
// (64 hex characters, as POST /v1/accounts takes it). sign prints the curl arguments of the signed request: -H for Rps-Key-Id,
// Rps-Signed-At, Rps-Signature, Rps-Game-Id and Rps-Round when the message names a game and a
// round, and Idempotency-Key, all without spaces, so that `curl ... $(rpskey sign ...)` sends
// them. The message is tournament.ActionMessage, the one the server checks; README's "The
// protocol, for third-party clients" gives it byte for byte.
//
// It is a tool of its own rather than an rpsbot command: it needs no server, no account and no
// bot, only a key file, and does one thing a person with curl needs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

const usage = `usage:
  rpskey new FILE
  rpskey sign --key FILE --origin O [--player ID] [--lobby ID --game ID] [--round N] [--idempotency-key K] ACTION [payload flags]

ACTION is sign_up, add_key, retire_key, register, leave, commit, reveal or quick_join; its
payload flags are --name (sign_up; the public key is the key file's), --public-key (add_key),
--key-id (retire_key), --bet (register: the game's betSize), --commitment (commit), --reveal
(reveal), --bet-size and --ruleset (quick_join). Run "rpskey sign -h" for every flag.
`

func main() {
	os.Exit(run(os.Args[1:], time.Now, os.Stdout, os.Stderr))
}

var errUsage = errors.New("usage")

// run executes a command line at the instant now gives and returns the exit status.
func run(args []string, now func() time.Time, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "new":
		err = newKey(args[1:], stdout)
	case "sign":
		err = sign(args[1:], now(), stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "rpskey: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "rpskey:", err)
		return 1
	}
}

func newKey(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: rpskey new takes one FILE", errUsage)
	}
	k := apiclient.NewPlayerKey()
	if err := apiclient.WritePlayerKey(args[0], k); err != nil {
		return err
	}
	fmt.Fprintln(stdout, k.PublicKey())
	return nil
}

func sign(args []string, at time.Time, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rpskey sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		keyFile = fs.String("key", "", "the key file (rpskey new)")
		m       tournament.ActionMessage
		player  = fs.String("player", "", "the acting account's id (every action but sign_up)")
		lobby   = fs.String("lobby", "", "the lobby (register, leave, commit, reveal)")
		game    = fs.String("game", "", "the lobby's current game.id as last read (register, leave, commit, reveal)")
		p       tournament.ActionPayload
	)
	fs.StringVar(&m.Origin, "origin", "", "the transparency log's origin (GET /v1/log: .origin)")
	fs.IntVar(&m.Round, "round", 0, "the game's current round (commit, reveal)")
	fs.StringVar(&m.IdempotencyKey, "idempotency-key", "", "the request's Idempotency-Key (every action but sign_up)")
	fs.StringVar(&p.Name, "name", "", "sign_up: the account's name, exactly as sent")
	fs.StringVar(&p.PublicKey, "public-key", "", "add_key: the new key, 64 hex characters")
	fs.StringVar(&p.KeyID, "key-id", "", "retire_key: the id of the key retired")
	fs.Int64Var(&p.Bet, "bet", 0, "register: the game's betSize")
	fs.StringVar(&p.Commitment, "commitment", "", "commit: the commitment, 64 hex characters")
	fs.StringVar(&p.Reveal, "reveal", "", "reveal: the exact string revealed")
	fs.Int64Var(&p.BetSize, "bet-size", 0, "quick_join: the request's betSize")
	fs.StringVar(&p.Ruleset, "ruleset", "", "quick_join: the request's ruleset (none: null)")
	// The action may come anywhere among the flags.
	var actions []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		actions, args = append(actions, fs.Arg(0)), fs.Args()[1:]
	}
	if len(actions) != 1 {
		return fmt.Errorf("%w: rpskey sign takes one ACTION", errUsage)
	}
	action := actions[0]
	if *keyFile == "" || m.Origin == "" {
		return fmt.Errorf("%w: --key and --origin are required", errUsage)
	}
	if strings.ContainsAny(m.IdempotencyKey, " \t\r\n") {
		// The printed arguments are split on spaces by the shell.
		return fmt.Errorf("%w: an --idempotency-key without spaces, please", errUsage)
	}
	k, err := apiclient.ReadPlayerKey(*keyFile)
	if err != nil {
		return err
	}
	m.Action = tournament.ActionName(action)
	m.Player, m.LobbyID, m.GameID = tournament.AccountID(*player), tournament.LobbyID(*lobby), tournament.GameID(*game)
	if m.Action == tournament.ActionSignUp && p.PublicKey == "" {
		p.PublicKey = k.PublicKey()
	}
	m.Payload = p
	s, err := k.Sign(m, at)
	if err != nil {
		return err
	}
	pairs := s.Pairs()
	if m.IdempotencyKey != "" {
		pairs = append(pairs, "Idempotency-Key", m.IdempotencyKey)
	}
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, "-H", pairs[i]+":"+pairs[i+1])
	}
	fmt.Fprintln(stdout, strings.Join(out, " "))
	return nil
}
