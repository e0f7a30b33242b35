package main

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// scrape is one reading of rpsd's /metrics: each sample's value by its name and labels, as
// exposed (such as `rps_clock_lag_seconds_bucket{le="0.01"}`).
type scrape map[string]float64

// scrapeMetrics reads the server's /metrics.
func scrapeMetrics(server string) (scrape, error) {
	resp, err := http.Get(server + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: HTTP %d", resp.StatusCode)
	}
	s := scrape{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			s[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return s, nil
}

// since is the growth of every sample from earlier (counters and histograms over a run).
func (s scrape) since(earlier scrape) scrape {
	d := scrape{}
	for k, v := range s {
		d[k] = v - earlier[k]
	}
	return d
}

// metricsSince scrapes the server's metrics again and returns their growth since before, taken
// with beforeErr.
func metricsSince(server string, before scrape, beforeErr error) (scrape, error) {
	if beforeErr != nil {
		return nil, beforeErr
	}
	now, err := scrapeMetrics(server)
	if err != nil {
		return nil, err
	}
	return now.since(before), nil
}

// writeFigures are the transactions that committed actions and the actions they carried, over a
// run (rps_write_transactions_total and rps_write_actions_total).
type writeFigures struct {
	transactions, actions float64
	// missing says why there are no figures (rpsd did not export them, or /metrics failed).
	missing string
}

func writesOf(growth scrape, err error) writeFigures {
	if err != nil {
		return writeFigures{missing: err.Error()}
	}
	t, ok := growth["rps_write_transactions_total"]
	if !ok {
		return writeFigures{missing: "rpsd exports no rps_write_transactions_total"}
	}
	return writeFigures{transactions: t, actions: growth["rps_write_actions_total"]}
}

// ratio is the average number of actions per transaction alone.
func (w writeFigures) ratio() string {
	if w.missing != "" || w.transactions == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", w.actions/w.transactions)
}

// String is the average number of actions per transaction, with its terms.
func (w writeFigures) String() string {
	switch {
	case w.missing != "":
		return "unknown (" + w.missing + ")"
	case w.transactions == 0:
		return "no transaction committed actions"
	}
	return fmt.Sprintf("%.2f (%.0f actions in %.0f transactions)", w.actions/w.transactions, w.actions, w.transactions)
}

var bucketRE = regexp.MustCompile(`^rps_clock_lag_seconds_bucket\{le="([^"]+)"\}$`)

// clockLag is the server's own histogram of the clock worker's lag (deadline to the expiry's
// transaction) grown over a run: its count and the bucket bounds that hold its p50 and p99.
func clockLag(growth scrape, err error) string {
	if err != nil {
		return "metrics unavailable: " + err.Error()
	}
	type bucket struct {
		le    string
		bound float64
		count float64
	}
	var buckets []bucket
	for k, v := range growth {
		if m := bucketRE.FindStringSubmatch(k); m != nil {
			bound := math.Inf(1)
			if m[1] != "+Inf" {
				bound, _ = strconv.ParseFloat(m[1], 64)
			}
			buckets = append(buckets, bucket{m[1], bound, v})
		}
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		switch {
		case a.bound < b.bound:
			return -1
		case a.bound > b.bound:
			return 1
		}
		return 0
	})
	if len(buckets) == 0 || buckets[len(buckets)-1].count == 0 {
		return "no expiries in rps_clock_lag_seconds"
	}
	total := buckets[len(buckets)-1].count
	at := func(q float64) string {
		for _, b := range buckets {
			if b.count >= q*total {
				return "<= " + b.le + " s"
			}
		}
		return "?"
	}
	return fmt.Sprintf("%.0f expiries; p50 %s, p99 %s", total, at(0.5), at(0.99))
}
