package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/commitreveal/rps/store"
)

// logNote measures the transparency log over the players' actions since start (rpsd integrates
// them every second, as in production): how far it ran behind their commits and how long its
// witness rounds took (none here: no witnesses are configured, so a checkpoint is published as it
// is made). See BenchmarkLogUnderMixedLoad for rounds with two real witnesses.
func logNote(ctx context.Context, dbURL, what string, start time.Time) string {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return "transparency log during " + what + ": " + err.Error()
	}
	defer pool.Close()
	f, err := store.New(pool, store.Options{}).LogFiguresSince(ctx, start.UnixMilli())
	if err != nil {
		return "transparency log during " + what + ": " + err.Error()
	}
	return "transparency log during " + what + ": " + f.String()
}
