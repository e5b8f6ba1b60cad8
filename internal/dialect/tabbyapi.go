package dialect

import (
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// tabbyAPI is the canonical dialect: its names (without the prefix) are the
// snapshot's names, so reading it is a prefix strip. Its series carry no
// labels.
var tabbyAPI = dialect{
	name:  "tabbyapi",
	title: "tabbyAPI",
	match: isTabbyAPI,
	read:  readTabbyAPI,
	// The header carries the process start in Unix seconds.
	startHeaderIsTime: true,
	advice: snapshot.Advice{
		SlowScrape: "tabbyAPI renders /metrics on the event loop that drives generation",
		QueueFix:   "raise model.max_batch_size in config.yml while the KV cache has room",
		KVFix:      "raise model.cache_size, or quantise the cache with model.cache_mode (Q8, Q6 or Q4 on exllamav2; k,v bits such as 8,8 on exllamav3)",
		// The offload and recurrent caches are sized in config.yml's memory
		// section; pinning runs on the generator's thread.
		OffloadBudget:   "sysmem_kv_cache",
		ColdAlloc:       "about 2.5 GB/s on the generator's own thread: a stall",
		RecurrentBudget: "sysmem_recurrent_cache",
	},
}

func isTabbyAPI(name string) bool { return strings.HasPrefix(name, "tabbyapi:") }

// tabbyModelLabel is the label the exporter's per-model series carry
// (exporter.ModelLabel; tabbyAPI itself serves one model, unlabelled).
var tabbyModelLabel = []string{"model"}

// proxySeries is a family only `inferscope proxy` publishes beside the
// metric set: its figures are the upstream API's, measured in front of it.
// proxyUpstream is its info series naming the server behind it, once the
// server's answers said.
const (
	proxySeries   = "inferscope_proxy_requests_total"
	proxyUpstream = "inferscope_proxy_upstream_info"
)

func readTabbyAPI(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	s.Models = servedModels(fams, isTabbyAPI, tabbyModelLabel)
	keep, err := pickModel(s, o.Model, tabbyModelLabel)
	if err != nil {
		return err
	}
	proxied(fams, s)
	p := newMapper(fams, keep, s)
	for _, mf := range fams {
		name, ok := strings.CutPrefix(mf.GetName(), "tabbyapi:")
		if !ok {
			processStart(mf, s)
			continue
		}
		// A name the report does not know (a newer server's series) stays
		// out of the canonical figures; JSON "raw" keeps it.
		d, known := snapshot.Declared(name)
		if !known || d.Extra || (d.Kind == snapshot.Histogram) != (mf.GetType() == dto.MetricType_HISTOGRAM) {
			continue
		}
		if d.Kind == snapshot.Histogram {
			if h := Hist(mf, keep); h != nil {
				s.Histograms[name] = h
			}
			continue
		}
		if tabbyFractions[name] && !p.ratioOK(mf, keep, 1, "fraction") {
			continue
		}
		if v, ok := Sum(mf, keep); ok {
			s.Scalars[name] = v
		}
	}
	return nil
}

// processStart reads the unprefixed standard process_start_time_seconds,
// when a process collector adds it and the metric set's own is absent.
func processStart(mf *dto.MetricFamily, s *snapshot.Snapshot) {
	if mf.GetName() != "process_start_time_seconds" {
		return
	}
	if v, ok := Sum(mf, nil); ok {
		if _, have := s.Scalars[snapshot.ProcessStartTimeSeconds]; !have {
			s.Scalars[snapshot.ProcessStartTimeSeconds] = v
		}
	}
}

// tabbyFractions are tabbyAPI's gauges that hold a fraction 0..1.
var tabbyFractions = map[string]bool{
	snapshot.KVCacheUsageRatio: true, snapshot.KVOffloadUsageRatio: true, snapshot.RecurrentCacheUsageRatio: true,
	snapshot.SpecDecodeDraftAcceptanceRate: true,
}

// proxied marks a scrape of `inferscope proxy` (its own family beside the
// metric set): not tabbyAPI but whatever served the API, whose knobs and
// /metrics loop are not tabbyAPI's, and the server behind it where the
// proxy knows it.
func proxied(fams []*dto.MetricFamily, s *snapshot.Snapshot) {
	upstream := ""
	for _, mf := range fams {
		switch mf.GetName() {
		case proxySeries:
			s.Via = "inferscope proxy"
			s.Advice = snapshot.Advice{}
		case proxyUpstream:
			upstream = upstreamOf(mf)
		}
	}
	if s.Via != "" {
		s.Upstream = upstream
	}
}

// upstreamKinds are the servers the proxy can name (proxy.UpstreamKinds'
// values; a test keeps the two in step).
var upstreamKinds = []string{"llamacpp"}

// upstreamOf is the server kind the proxy's info series names: a dialect's
// name, or "" for anything else (the series is the proxy's, but a scrape is
// outside input).
func upstreamOf(mf *dto.MetricFamily) string {
	for _, m := range mf.GetMetric() {
		v, ok := labelValue(m, "server")
		if !ok || m.GetGauge().GetValue() != 1 {
			continue
		}
		if slices.Contains(upstreamKinds, v) {
			return v
		}
	}
	return ""
}
