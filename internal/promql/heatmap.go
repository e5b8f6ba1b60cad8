package promql

// BucketRates writes a histogram's buckets as a heatmap draws them: the
// per-second rate of each cumulative bucket over the window, summed by le
// across every series selected (the instances and models a dashboard's
// variables choose), taking the largest over replicas first where the
// series repeat one. ok is false where the server does not publish the
// histogram. Its result has one series per bound, cumulative: a bucket's
// own observations are its series less the one below (Grafana's heatmap
// format takes them apart itself).
func (l *Library) BucketRates(name string) (string, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return "", false
	}
	return "sum by (le) (" + r.overReplicas("rate("+l.selector(r, "_bucket")+"["+l.window+"])") + ")", true
}
