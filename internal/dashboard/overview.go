package dashboard

import (
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	gdash "github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	gprom "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/promql"
)

// OverviewTitle is the title of the dashboard's first row.
const OverviewTitle = "Now"

// Overview is the dashboard's first row, what people look at first: the
// figures of the moment as stat panels, every instance's in one table,
// and the latency histograms as heatmaps. Its stats and columns are the
// report's figures (the library's, as the other panels); the heatmaps
// are the histograms' bucket rates.
type Overview struct {
	// Stats are one panel per figure: the KV cache in use, the requests
	// waiting, the requests finished per second.
	Stats []Panel
	// Table is every instance's figures, one column per query, read at
	// the dashboard's end time; no queries where there are none.
	Table Panel
	// Heatmaps are time to first token and end-to-end latency, where the
	// server publishes them.
	Heatmaps []Heatmap
}

// Heatmap is one latency histogram over time.
type Heatmap struct {
	ID, Title string
	// Expr is the buckets' rates by bound (promql.Library.BucketRates).
	Expr string
}

// statFigures are the stat panels' figures; tableFigures the instance
// table's columns, with their headers.
var (
	statFigures  = []string{"live/kv_cache", "live/waiting", "throughput/requests"}
	tableFigures = []struct{ id, header string }{
		{"throughput/requests", "req/s"},
		{"throughput/decode_work", "gen tok/s"},
		{"live/running", "running"},
		{"live/waiting", "waiting"},
		{"live/kv_cache", "KV cache"},
		{"latency/ttft_p99", "TTFT p99"},
	}
)

// heatmapRows are the histograms drawn as heatmaps: the report's latency
// rows of that id.
var heatmapRows = []string{"ttft", "e2e"}

// NewOverview lays out a library's overview: what the server publishes of
// its stats, columns and heatmaps.
func NewOverview(l *promql.Library) Overview {
	var o Overview
	for _, id := range statFigures {
		if f, ok := l.Figure(id); ok {
			o.Stats = append(o.Stats, Panel{ID: id, Title: f.Title, Unit: f.Unit, Queries: []Query{{Figure: f}}})
		}
	}
	o.Table = Panel{ID: "overview/instances", Title: "each instance, now"}
	for _, c := range tableFigures {
		if f, ok := l.Figure(c.id); ok {
			o.Table.Queries = append(o.Table.Queries, Query{Figure: f, Suffix: c.header})
		}
	}
	for _, row := range analysis.LatencyRows {
		for _, id := range heatmapRows {
			if row.ID != id {
				continue
			}
			if e, ok := l.BucketRates(row.Hist); ok {
				o.Heatmaps = append(o.Heatmaps, Heatmap{ID: "latency/" + id, Title: row.Title, Expr: e})
			}
		}
	}
	return o
}

// Panels is how many panels the overview draws in f: its stats, its table
// where it has columns and, in Grafana, its heatmaps (Perses' heatmap
// reads native histograms only).
func (o Overview) Panels(f Format) int {
	n := len(o.Stats)
	if len(o.Table.Queries) > 0 {
		n++
	}
	if f == Grafana {
		n += len(o.Heatmaps)
	}
	return n
}

// Figures are the overview's figures in the order its panels show them:
// the stats, then the table's columns.
func (o Overview) Figures() []promql.Figure {
	var out []promql.Figure
	for _, p := range append(o.Stats, o.Table) {
		for _, q := range p.Queries {
			out = append(out, q.Figure)
		}
	}
	return out
}

// grafanaOverview adds the overview's row and panels to b from id on; it
// returns the last id used.
//
//lint:ignore SA1019 the classic model is the one written (grafana.go says why)
func grafanaOverview(b *gdash.DashboardBuilder, l *promql.Library, o Overview, id uint32) (*gdash.DashboardBuilder, uint32) {
	id++
	b = b.WithRow(gdash.NewRowBuilder(OverviewTitle).Id(id))
	for _, p := range o.Stats {
		id++
		b = b.WithPanel(grafanaStat(l, p).Id(id))
	}
	if len(o.Table.Queries) > 0 {
		id++
		b = b.WithPanel(grafanaTable(l, o.Table).Id(id))
	}
	for _, h := range o.Heatmaps {
		id++
		b = b.WithPanel(grafanaHeatmap(h).Id(id))
	}
	return b, id
}

// grafanaStat is a stat panel: each series' last value, over a
// sparkline of the range, coloured from the threshold where the report's
// note starts.
func grafanaStat(l *promql.Library, p Panel) *stat.PanelBuilder {
	sp := stat.NewPanelBuilder().
		Title(p.Title).
		Description(describe(p)).
		Datasource(datasource()).
		Unit(grafanaUnits[p.Unit]).
		Span(4).
		Height(5).
		NoValue("not published in this range").
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
	steps := []gdash.Threshold{{Color: "text"}}
	for _, v := range thresholds(p.ID) {
		steps = append(steps, gdash.Threshold{Value: &v, Color: "orange"})
	}
	sp = sp.Thresholds(gdash.NewThresholdsConfigBuilder().Mode(gdash.ThresholdsModeAbsolute).Steps(steps))
	q := p.Queries[0]
	return sp.WithTarget(gprom.NewDataqueryBuilder().Expr(q.Figure.Expr).LegendFormat(legend(l.By(), "")).RefId("A").Range())
}

// grafanaTable is one row per instance (per series of the library's
// labels), one column per figure: instant queries merged on their labels.
func grafanaTable(l *promql.Library, p Panel) *table.PanelBuilder {
	tp := table.NewPanelBuilder().
		Title(p.Title).
		Description("Each instance's figures at the end of the range, one column per figure: " + columnsSaid(p) + ".").
		Datasource(datasource()).
		Span(12).
		Height(8).
		NoValue("not published").
		WithTransformation(gdash.DataTransformerConfig{Id: "merge", Options: map[string]any{}})
	rename := map[string]any{}
	exclude := map[string]any{"Time": true}
	for i, q := range p.Queries {
		ref := string(rune('A' + i))
		rename["Value #"+ref] = q.Suffix
		tp = tp.OverrideByName(q.Suffix, []gdash.DynamicConfigValue{{Id: "unit", Value: grafanaUnits[q.Figure.Unit]}})
		tp = tp.WithTarget(gprom.NewDataqueryBuilder().
			Expr(q.Figure.Expr).
			RefId(ref).
			Format(gprom.PromQueryFormatTable).
			Instant())
	}
	return tp.WithTransformation(gdash.DataTransformerConfig{Id: "organize", Options: map[string]any{"renameByName": rename, "excludeByName": exclude}})
}

// columnsSaid lists a table's columns and what each is.
func columnsSaid(p Panel) string {
	parts := make([]string, len(p.Queries))
	for i, q := range p.Queries {
		parts[i] = q.Suffix + " (" + q.Figure.Title + ")"
	}
	return strings.Join(parts, ", ")
}

// grafanaHeatmap draws a latency histogram's buckets over time: each
// bucket's observations per second, the buckets as the server bounds
// them (Grafana takes the cumulative series apart).
func grafanaHeatmap(h Heatmap) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Title(h.Title + ", by bucket").
		Description(h.Title + ": observations per second in each of the histogram's buckets, over " + RateInterval + "; the darker a cell, the more requests took that long.").
		Datasource(datasource()).
		Span(12).
		Height(8).
		Calculate(false).
		CellValues(heatmap.NewCellValuesBuilder().Unit("reqps")).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s")).
		RowsFrame(heatmap.NewRowsHeatmapOptionsBuilder().Layout(common.HeatmapCellLayoutLe)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().Mode(heatmap.HeatmapColorModeScheme).Scheme("Oranges").Scale(heatmap.HeatmapColorScaleExponential).Exponent(0.5).Steps(64)).
		WithTarget(gprom.NewDataqueryBuilder().
			Expr(h.Expr).
			LegendFormat("{{le}}").
			Format(gprom.PromQueryFormatHeatmap).
			RefId("A").
			Range())
}

// persesOverview is the overview's grid: stat charts and the instance
// table. Perses' heatmap chart reads native histograms only, which none
// of these servers publishes, so its overview has no heatmap.
func persesOverview(d *PersesDashboard, l *promql.Library, o Overview) {
	grid := PersesLayout{Kind: "Grid", Spec: PersesLayoutSpec{Display: PersesGridDisplay{Title: OverviewTitle, Collapse: PersesCollapse{Open: true}}}}
	for i, p := range o.Stats {
		key := "overview_" + panelKey(p.ID)
		spec := map[string]any{"calculation": "last-number", "sparkline": map[string]any{}}
		if f, ok := persesFormats[p.Unit]; ok {
			spec["format"] = f
		}
		if th := thresholds(p.ID); len(th) > 0 {
			steps := make([]map[string]any, len(th))
			for j, v := range th {
				steps[j] = map[string]any{"value": v, "color": "orange"}
			}
			spec["thresholds"] = map[string]any{"steps": steps}
		}
		d.Spec.Panels[key] = PersesPanel{Kind: "Panel", Spec: PersesPanelSpec{
			Display: PersesDisplay{Name: p.Title, Description: describe(p)},
			Plugin:  PersesPlugin{Kind: "StatChart", Spec: spec},
			Queries: persesQueries(l, p),
		}}
		grid.Spec.Items = append(grid.Spec.Items, PersesGridItem{X: 8 * i, Y: 0, Width: 8, Height: 5, Content: map[string]string{"$ref": "#/spec/panels/" + key}})
	}
	if len(o.Table.Queries) > 0 {
		key := "overview_instances"
		// Perses names a merged table's value columns "value #N", from 1.
		columns := []map[string]any{{"name": "timestamp", "hide": true}}
		for i, q := range o.Table.Queries {
			columns = append(columns, map[string]any{"name": "value #" + strconv.Itoa(i+1), "header": q.Suffix})
		}
		d.Spec.Panels[key] = PersesPanel{Kind: "Panel", Spec: PersesPanelSpec{
			Display: PersesDisplay{Name: o.Table.Title, Description: "Each instance's figures, one column per figure: " + columnsSaid(o.Table) + "."},
			Plugin: PersesPlugin{Kind: "Table", Spec: map[string]any{"density": "compact", "columnSettings": columns,
				"transforms": []map[string]any{{"kind": "MergeSeries", "spec": map[string]any{}}}}},
			Queries: persesQueries(l, o.Table),
		}}
		grid.Spec.Items = append(grid.Spec.Items, PersesGridItem{X: 0, Y: 5, Width: 24, Height: 8, Content: map[string]string{"$ref": "#/spec/panels/" + key}})
	}
	if len(grid.Spec.Items) > 0 {
		d.Spec.Layouts = append(d.Spec.Layouts, grid)
	}
}
