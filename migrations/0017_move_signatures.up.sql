-- Players' signatures of their commitments and reveals (issue 31): kept with the move and
-- published with it in the round's transcript once the round is over (the move's event binds each
-- by its hash meanwhile). NULL for a move made unsigned.
ALTER TABLE round_moves ADD COLUMN commit_signature bytea CHECK (length(commit_signature) = 64);
ALTER TABLE round_moves ADD COLUMN reveal_signature bytea CHECK (length(reveal_signature) = 64);
