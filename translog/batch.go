package translog

import "sort"

// Pending is an event committed but not yet in the log.
type Pending struct {
	Leaf
	// At is the event's instant (Unix milliseconds), to measure how far the log runs behind.
	At int64
}

// Range is a run of one lobby's events that sit at consecutive leaves: leaf FirstIndex+i is the
// lobby's event FirstSeq+i, for i below Count. It is how an event's leaf is found, and a leaf's
// event.
type Range struct {
	FirstIndex int64
	Lobby      string
	FirstSeq   int64
	Count      int64
}

// Head is a lobby's newest logged event and its leaf.
type Head struct {
	Lobby     string
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
// for each lobby with pending events, the seq of its newest logged event (absent: none). Each
// lobby's events go in seq order, one lobby after another (by lobby id), and only as far as they
// continue the lobby's logged prefix without a gap: an event whose predecessor has not committed
// yet (a transaction that took its id later but locked the lobby first) waits, with everything
// after it, for a later batch, so every lobby's leaves follow its chain. Events already logged
// are skipped.
func Sequence(size int64, logged map[string]int64, pending []Pending) Batch {
	events := append([]Pending(nil), pending...)
	sort.Slice(events, func(i, j int) bool {
		if events[i].Lobby != events[j].Lobby {
			return events[i].Lobby < events[j].Lobby
		}
		return events[i].Seq < events[j].Seq
	})
	var b Batch
	next := size
	for i := 0; i < len(events); {
		lobby := events[i].Lobby
		last := logged[lobby]
		first := next
		var r *Range
		for ; i < len(events) && events[i].Lobby == lobby; i++ {
			e := events[i]
			switch {
			case e.Seq <= last:
				continue
			case e.Seq != last+1:
				b.HeldBack = true
				for i < len(events) && events[i].Lobby == lobby {
					i++
				}
				goto done
			}
			if r == nil {
				b.Ranges = append(b.Ranges, Range{FirstIndex: next, Lobby: lobby, FirstSeq: e.Seq})
				r = &b.Ranges[len(b.Ranges)-1]
			}
			r.Count++
			b.Leaves = append(b.Leaves, e)
			last = e.Seq
			next++
		}
	done:
		if next > first {
			b.Heads = append(b.Heads, Head{Lobby: lobby, Seq: last, LeafIndex: next - 1})
		}
	}
	return b
}
