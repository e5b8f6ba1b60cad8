package dialect

import (
	"cmp"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// MaxParts is the most units a breakdown reads: a server with more
// data-parallel engines than that is read whole only (each part is one
// more reading of the exposition).
const MaxParts = 64

// readParts reads each unit of a server with more than one (the values of
// d.partLabel among the dialect's series) on its own: the families cut to
// that unit's series, through the same read, so that a part's figure is
// defined as the whole's. Series without the label are in no part. Where
// one endpoint serves several models and the report covers them all (s,
// the whole, lists them), a unit is one model's engine: the models'
// engines share their numbers. A server re-exported with replica labels
// (Ray Serve's ReplicaId) has units the label does not tell apart, and
// none is read.
func readParts(d dialect, fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) []snapshot.Part {
	if d.partLabel == "" {
		return nil
	}
	values := partValues(d, fams)
	if len(values) > MaxParts {
		return nil
	}
	models := []string{o.Model}
	if o.Model == "" && len(s.Models) > 1 {
		models = s.Models
	}
	var parts []snapshot.Part
	for _, model := range models {
		po := o
		po.Model, po.Parts = model, false
		for _, v := range values {
			ps, err := read(d, cut(fams, d.partLabel, v), po)
			if err != nil || !recognised(ps) {
				continue
			}
			ps.Source, ps.Dialect = s.Source, s.Dialect
			parts = append(parts, snapshot.Part{Label: d.partLabel, Value: v, Snapshot: ps})
		}
	}
	if len(parts) < 2 || len(parts) > MaxParts {
		return nil
	}
	return parts
}

// partValues are the values of d's part label among its series, in
// numeric order where they are numbers; nil where any series carries a
// replica label.
func partValues(d dialect, fams []*dto.MetricFamily) []string {
	seen := map[string]bool{}
	var values []string
	for _, mf := range fams {
		if !d.match(mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			if _, ok := labelValue(m, "ReplicaId"); ok {
				return nil
			}
			if v, ok := labelValue(m, d.partLabel); ok && !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
	}
	slices.SortFunc(values, func(a, b string) int {
		x, errA := strconv.Atoi(a)
		y, errB := strconv.Atoi(b)
		if errA == nil && errB == nil {
			return cmp.Compare(x, y)
		}
		return cmp.Compare(a, b)
	})
	return values
}

// cut returns the families with only the series whose label is value
// (families left without a series are left out).
func cut(fams []*dto.MetricFamily, label, value string) []*dto.MetricFamily {
	keep := withLabel(label, value)
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, mf := range fams {
		var ms []*dto.Metric
		for _, m := range mf.GetMetric() {
			if keep(m) {
				ms = append(ms, m)
			}
		}
		if len(ms) > 0 {
			out = append(out, &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: ms})
		}
	}
	return out
}
