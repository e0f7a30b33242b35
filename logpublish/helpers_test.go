package logpublish_test

import (
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

func tlogLobby(id string) tournament.LobbyID { return tournament.LobbyID(id) }

func leafOf(ranges []translog.Range, seq int64) (int64, bool) { return store.LeafOf(ranges, seq) }
