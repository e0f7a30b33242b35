package translog

import "sort"

// Pending is an event committed but not yet in the log.
type Pending struct {
	Leaf
	// At is the event's instant (Unix milliseconds), to measure how far the log runs behind.
	At int64
}

// Range is a run of one chain's events (a lobby's, or an account's key events when Account is
// set) that sit at consecutive leaves: leaf FirstIndex+i is the chain's event FirstSeq+i, for i
// below Count. It is how an event's leaf is found, and a leaf's event.
type Range struct {
	FirstIndex int64
	Lobby      string
	Account    string
	FirstSeq   int64
	Count      int64
}

// Head is a chain's newest logged event and its leaf (a lobby's, or an account's key log's when
// Account is set).
type Head struct {
	Lobby     string
	Account   string
	Seq       int64
	LeafIndex int64
}

// Batch is what one integration appends, in log order.
type Batch struct {
	Leaves []Pending
	Ranges []Range
	Heads  []Head
	// HeldBack is true when some lobby's events were left for a later batch because an earlier
	// event of that lobby was not committed yet (see Sequence).
	HeldBack bool
}

// Sequence orders pending events into the next batch of a log of the given size. logged holds,
// for each chain (Leaf.Chain: a lobby's events, an account's key events) with pending events,
// the seq of its newest logged event (absent: none). Each chain's events go in seq order, one
// chain after another (by Chain: the lobbies by id, then the accounts' key logs by id), and only
// as far as they continue the chain's logged prefix without a gap: an event whose predecessor
// has not committed yet (a transaction that took its id later but locked the lobby or account
// first) waits, with everything after it, for a later batch, so every chain's leaves follow it.
// Events already logged are skipped.
func Sequence(size int64, logged map[string]int64, pending []Pending) Batch {
	events := append([]Pending(nil), pending...)
	sort.Slice(events, func(i, j int) bool {
		if ci, cj := events[i].Chain(), events[j].Chain(); ci != cj {
			return ci < cj
		}
		return events[i].Seq < events[j].Seq
	})
	var b Batch
	next := size
	for i := 0; i < len(events); {
		lobby, account, chain := events[i].Lobby, events[i].Account, events[i].Chain()
		last := logged[chain]
		first := next
		var r *Range
		for ; i < len(events) && events[i].Chain() == chain; i++ {
			e := events[i]
			switch {
			case e.Seq <= last:
				continue
			case e.Seq != last+1:
				b.HeldBack = true
				for i < len(events) && events[i].Chain() == chain {
					i++
				}
				goto done
			}
			if r == nil {
				b.Ranges = append(b.Ranges, Range{FirstIndex: next, Lobby: lobby, Account: account, FirstSeq: e.Seq})
				r = &b.Ranges[len(b.Ranges)-1]
			}
			r.Count++
			b.Leaves = append(b.Leaves, e)
			last = e.Seq
			next++
		}
	done:
		if next > first {
			b.Heads = append(b.Heads, Head{Lobby: lobby, Account: account, Seq: last, LeafIndex: next - 1})
		}
	}
	return b
}
