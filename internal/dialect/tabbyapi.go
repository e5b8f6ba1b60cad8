package dialect

import (
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
	dto "github.com/prometheus/client_model/go"
)

// tabbyAPI is the canonical dialect: its names (without the prefix) are the
// snapshot's names, so reading it is a prefix strip. Its series carry no
// labels.
var tabbyAPI = dialect{
	name:  "tabbyapi",
	match: func(n string) bool { return strings.HasPrefix(n, "tabbyapi:") },
	read:  readTabbyAPI,
	// The header carries the process start in Unix seconds.
	startHeaderIsTime: true,
}

func readTabbyAPI(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	if o.Model != "" {
		return &ModelError{Model: o.Model}
	}
	for _, mf := range fams {
		name, ok := strings.CutPrefix(mf.GetName(), "tabbyapi:")
		if !ok {
			// The unprefixed standard series, when a process collector adds it.
			if mf.GetName() == "process_start_time_seconds" {
				if v, ok := Sum(mf, nil); ok {
					if _, have := s.Scalars["process_start_time_seconds"]; !have {
						s.Scalars["process_start_time_seconds"] = v
					}
				}
			}
			continue
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			if h := Hist(mf, nil); h != nil {
				s.Histograms[name] = h
			}
			continue
		}
		if v, ok := Sum(mf, nil); ok {
			s.Scalars[name] = v
		}
	}
	return nil
}
