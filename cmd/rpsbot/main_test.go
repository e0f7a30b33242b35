package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunRefusesBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{"dance"}, 2, "unknown command"},
		{[]string{"play", "--admin-token", ""}, 2, "--admin-token"},
		{[]string{"play", "--admin-token", "t", "--strategy", "script"}, 2, "--script FILE"},
		{[]string{"play", "--admin-token", "t", "--strategy", "psychic"}, 2, "unknown strategy"},
		{[]string{"load", "--admin-token", "t", "--server", "http://10.1.2.3:8080"}, 1, "loopback"},
		{[]string{"load", "--admin-token", "t", "--follow", "telepathy"}, 2, "lobby, poll or stream"},
		{[]string{"help"}, 0, "rpsbot load"},
	} {
		t.Setenv("RPSD_ADMIN_TOKEN", "")
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("run(%q) = %d, %q %q; want %d and %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.want)
		}
	}
}
