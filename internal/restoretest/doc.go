// Package restoretest is the restore drill (make test-restore, README "Backups and restores"):
// rpsd on its private cluster with synchronous backups loses its database's disk mid-play, is
// restored from the backups with the runbook's commands, and nothing acknowledged is lost.
package restoretest
