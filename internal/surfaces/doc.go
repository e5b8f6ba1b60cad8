// Package surfaces holds one test: that every surface inferscope shows a
// figure on says the same of it. One simulated fleet (staggered starts, a
// restart, an instance whose counters appear after its first scrape, a
// llama.cpp-like instance without cached tokens) is read through the
// one-shot report, --since, a watch session, the fleet view now and over
// a range (from a real Prometheus and VictoriaMetrics holding its
// scrapes) and the generated rules under promtool; a figure two surfaces
// show is equal, totals are their rows' arithmetic, pooled percentiles
// lie between the rows'.
package surfaces
