package api

import (
	"encoding/json"
	"testing"

	"github.com/commitreveal/rps/tournament"
)

// TestConfigInputIsConfigOfRequest: the config the API reads from a typed request body
// (configInput) is the one tournament.ConfigOfRequest reads from its JSON, which rpsverify uses
// to hold an admin's signed request to the config its event shows.
func TestConfigInputIsConfigOfRequest(t *testing.T) {
	for _, body := range []string{
		`{"betSize":10,"playersCountLimit":2}`,
		`{"betSize":0,"playersCountLimit":5,"entryTimeoutMs":7000,"moveTimeoutMs":8000,"revealTimeoutMs":9000,"ruleset":"rpsls",` +
			`"resolution":"weighted","startWhenFull":false,"maxExtensions":0,"maxRounds":0}`,
		`{"betSize":3,"playersCountLimit":3,"entryTimeoutMs":null,"ruleset":null,"resolution":null,"startWhenFull":null,"maxRounds":null}`,
		`{"betSize":3,"playersCountLimit":3,"startWhenFull":true,"maxExtensions":7}`,
	} {
		var in GameConfigInput
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			t.Fatal(err)
		}
		want, err := tournament.ConfigOfRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := configInput(in); got != want {
			t.Errorf("%s: configInput %+v, ConfigOfRequest %+v", body, got, want)
		}
	}
}
