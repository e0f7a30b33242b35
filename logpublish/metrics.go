package logpublish

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	lag         prometheus.Histogram
	integration prometheus.Histogram
	size        prometheus.Gauge
	round       prometheus.Histogram
	refusals    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rps_log_integration_lag_seconds",
			Help:    "Time from an event's instant to the commit of the batch that put it in the transparency log.",
			Buckets: []float64{.1, .25, .5, .75, 1, 1.5, 2, 3, 5, 10, 30},
		}),
		integration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rps_log_integration_seconds",
			Help:    "Time one integration takes: read, hash, sign, append.",
			Buckets: prometheus.ExponentialBuckets(.001, 2, 14),
		}),
		size: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rps_log_size",
			Help: "Leaves in the transparency log, as of this replica's last integration.",
		}),
		round: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rps_log_witness_round_seconds",
			Help:    "Time from a checkpoint's signing to its publication: with the first witness's cosignature, or without when no witness was left asking.",
			Buckets: prometheus.ExponentialBuckets(.001, 2, 14),
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rps_log_witness_failures_total",
			Help: "Checkpoints a witness did not cosign, by witness and reason.",
		}, []string{"witness", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.lag, m.integration, m.size, m.round, m.refusals)
	}
	return m
}
