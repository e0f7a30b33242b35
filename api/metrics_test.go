package api_test

import (
	"sync/atomic"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/store"
)

// The write counters are read from the store at every scrape, so a scrape shows the totals of
// that moment: the benchmark divides their growth over a run (actions per transaction).
func TestWriteCountersFollowTheStoreAtEveryScrape(t *testing.T) {
	t.Parallel()
	var stats atomic.Pointer[store.WriteStats]
	stats.Store(&store.WriteStats{Transactions: 3, Actions: 7})
	m := api.NewMetrics(nil)
	m.ExportWrites(func() store.WriteStats { return *stats.Load() })

	scrape := func() map[string]float64 {
		t.Helper()
		families, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			if n := f.GetName(); n == "rps_write_transactions_total" || n == "rps_write_actions_total" {
				got[n] = f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return got
	}
	want := func(got map[string]float64, transactions, actions float64) {
		t.Helper()
		if got["rps_write_transactions_total"] != transactions || got["rps_write_actions_total"] != actions {
			t.Errorf("scraped %v, want %v transactions and %v actions", got, transactions, actions)
		}
	}
	want(scrape(), 3, 7)
	stats.Store(&store.WriteStats{Transactions: 5, Actions: 20})
	want(scrape(), 5, 20)
}
