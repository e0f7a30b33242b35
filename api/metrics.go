package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/commitreveal/rps/store"
)

// Metrics are the server's Prometheus collectors, in a registry of their own so that several
// servers (in tests) never collide.
type Metrics struct {
	Registry     *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	actions      *prometheus.CounterVec
	stageChanges prometheus.Counter
	clockLag     prometheus.Histogram
}

// NewMetrics registers the collectors, the Go runtime's and, when pool is not nil, the database
// pool's.
func NewMetrics(pool *pgxpool.Pool) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rps_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rps_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rps_actions_total", Help: "Game actions by type and result (ok or the refusal code).",
		}, []string{"action", "result"}),
		stageChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rps_clock_expiries_total", Help: "Lobbies whose deadlines the clock worker applied.",
		}),
		clockLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rps_clock_lag_seconds", Help: "Time from a deadline to the clock worker applying it.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 5},
		}),
	}
	m.Registry.MustRegister(m.requests, m.latency, m.actions, m.stageChanges, m.clockLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if pool != nil {
		m.Registry.MustRegister(newPoolCollector(pool))
	}
	return m
}

// methodLabel is a request's method as a label value: the methods HTTP defines by name, any other
// as OTHER, so that invented methods cannot grow the exposition without bound.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "OTHER"
}

func (m *Metrics) observeRequest(method, route string, status int, elapsed time.Duration) {
	method = methodLabel(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

func (m *Metrics) observeAction(action string, err error) {
	result := "ok"
	if err != nil {
		result = asProblem(err).code
	}
	m.actions.WithLabelValues(action, result).Inc()
}

// ObserveExpiry records that the clock worker applied a lobby's deadline lag after it passed.
func (m *Metrics) ObserveExpiry(lag time.Duration) {
	m.stageChanges.Inc()
	m.clockLag.Observe(lag.Seconds())
}

// ExportWrites exports, read from stats at every scrape, how many transactions committed actions
// and how many actions they carried: their ratio is how well actions share transactions (the
// group commit's batch size), which the benchmark reports.
func (m *Metrics) ExportWrites(stats func() store.WriteStats) {
	m.Registry.MustRegister(writesCollector{
		stats:        stats,
		transactions: prometheus.NewDesc("rps_write_transactions_total", "Committed transactions that carried game actions.", nil, nil),
		actions:      prometheus.NewDesc("rps_write_actions_total", "Game actions carried by committed transactions, refusals included.", nil, nil),
	})
}

// writesCollector exports store.WriteStats as two counters.
type writesCollector struct {
	stats                 func() store.WriteStats
	transactions, actions *prometheus.Desc
}

func (c writesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.transactions
	ch <- c.actions
}

func (c writesCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.transactions, prometheus.CounterValue, float64(s.Transactions))
	ch <- prometheus.MustNewConstMetric(c.actions, prometheus.CounterValue, float64(s.Actions))
}

// poolCollector exports the database pool's statistics.
type poolCollector struct {
	pool                        *pgxpool.Pool
	total, idle, acquired, wait *prometheus.Desc
}

func newPoolCollector(pool *pgxpool.Pool) *poolCollector {
	return &poolCollector{
		pool:     pool,
		total:    prometheus.NewDesc("rps_db_pool_connections", "Open database connections.", nil, nil),
		idle:     prometheus.NewDesc("rps_db_pool_idle_connections", "Idle database connections.", nil, nil),
		acquired: prometheus.NewDesc("rps_db_pool_acquired_connections", "Database connections in use.", nil, nil),
		wait:     prometheus.NewDesc("rps_db_pool_wait_seconds_total", "Time spent waiting for a connection.", nil, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.idle
	ch <- c.acquired
	ch <- c.wait
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.wait, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
