package store

// Rules of the game that SQL must say too, to find rows by them (the clock's due games, the
// joinable lobbies of a list): each written here from its one definition in package tournament,
// and held to it by a test (TestRulesInSQL) that evaluates both over the same cases.

import (
	"strings"

	"github.com/commitreveal/rps/tournament"
)

// stagesSQL is "stage IN (...)" over the given stages, for the stage column named col.
func stagesSQL(col string, stages []tournament.Stage) string {
	quoted := make([]string, len(stages))
	for i, s := range stages {
		quoted[i] = "'" + string(s) + "'"
	}
	return col + " IN (" + strings.Join(quoted, ", ") + ")"
}

// openSQL is tournament.Stage.Open over games g; endedSQL is its opposite. The partial indexes
// games_open_deadline and games_unsettled (migrations 0001 and 0007) have these predicates, so the
// queries that say them are index probes.
var (
	openSQL  = stagesSQL("g.stage", tournament.OpenStages)
	endedSQL = stagesSQL("g.stage", tournament.EndedStages)
)

// dueSQL is tournament.Due over games g at the instant now (an SQL expression): its deadline is
// set and strictly past.
func dueSQL(now string) string {
	return "(g.deadline > 0 AND g.deadline < " + now + ")"
}

// openDeadlineSQL says that a game g is open with a deadline: the predicate of the index
// games_open_deadline.
var openDeadlineSQL = openSQL + " AND g.deadline > 0"

// joinableSQL is tournament.Game.Joinable over games g.
var joinableSQL = "(g.stage = '" + string(tournament.StageRegistration) +
	"' AND g.players < (g.config ->> 'playersCountLimit')::int)"
