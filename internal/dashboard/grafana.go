package dashboard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	gdash "github.com/grafana/grafana-foundation-sdk/go/dashboard"
	gprom "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/promql"
)

// grafanaUnits are Grafana's units for the figures'.
var grafanaUnits = map[promql.Unit]string{
	promql.Count:          "short",
	promql.Ratio:          "percentunit",
	promql.Seconds:        "s",
	promql.Tokens:         "suffix: tokens",
	promql.TokensPerSec:   "suffix: tok/s",
	promql.RequestsPerSec: "reqps",
	promql.BytesPerSec:    "Bps",
	promql.PerSec:         "suffix: /s",
	promql.Factor:         "suffix: ×",
}

// datasource is every query's datasource: the dashboard's variable.
func datasource() common.DataSourceRef {
	t, uid := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &t, Uid: &uid}
}

// GrafanaJSON writes the dashboard as Grafana's JSON model. user is the
// selector the user gave (the variables' values are read under it); l is
// a library built with [LibraryOptions] for [Grafana].
func GrafanaJSON(l *promql.Library, user []promql.Matcher, o Options) ([]byte, error) {
	o = o.withDefaults(l.Dialect())
	series, err := variableSeries(l, user)
	if err != nil {
		return nil, err
	}
	// The classic JSON model: what Grafana's import takes in every version
	// in use; the SDK's v2 schema is Grafana 12's own.
	//lint:ignore SA1019 the v2 schema would not import into Grafana before 12
	b := gdash.NewDashboardBuilder(o.Title).
		Uid(o.UID).
		Tags([]string{"inferscope", l.Dialect()}).
		Description("The report's figures for "+l.Dialect()+", over $__rate_interval: written by inferscope dashboard from the series names the server publishes.").
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(gdash.DashboardCursorSyncCrosshair).
		WithVariable(gdash.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus"))
	for _, v := range Variables(l.By()) {
		query := "label_values(" + series + ", " + v.Label + ")"
		b = b.WithVariable(gdash.NewQueryVariableBuilder(v.Name).
			Label(v.Label).
			Query(gdash.StringOrMap{String: &query}).
			Datasource(datasource()).
			Multi(true).
			IncludeAll(true).
			AllValue(".*").
			Refresh(gdash.VariableRefreshOnTimeRangeChanged).
			Sort(gdash.VariableSortAlphabeticalAsc))
	}
	b, id := grafanaOverview(b, l, NewOverview(l), 0)
	for _, row := range Rows(l) {
		id++
		b = b.WithRow(gdash.NewRowBuilder(row.Section.Title).Id(id))
		for _, p := range row.Panels {
			id++
			b = b.WithPanel(grafanaPanel(l, p).Id(id))
		}
	}
	if o.GPU != nil {
		id++
		b = b.WithRow(gdash.NewRowBuilder("GPU").Id(id))
		for _, p := range GPUPanels(o.GPU) {
			id++
			b = b.WithPanel(grafanaPanel(o.GPU, p).Id(id))
		}
	}
	d, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("building the Grafana dashboard: %w", err)
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("writing the Grafana dashboard: %w", err)
	}
	return append(out, '\n'), nil
}

func grafanaPanel(l labelled, p Panel) *timeseries.PanelBuilder {
	tp := timeseries.NewPanelBuilder().
		Title(p.Title).
		Description(describe(p)).
		Datasource(datasource()).
		Unit(grafanaUnits[p.Unit]).
		Span(8).
		Height(8).
		NoValue("not published in this range").
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
	if p.Unit == promql.Ratio {
		tp = tp.Min(0)
	}
	if th := thresholds(p.ID); len(th) > 0 {
		steps := []gdash.Threshold{{Color: "green"}}
		for _, v := range th {
			steps = append(steps, gdash.Threshold{Value: &v, Color: "orange"})
		}
		tp = tp.Thresholds(gdash.NewThresholdsConfigBuilder().Mode(gdash.ThresholdsModeAbsolute).Steps(steps)).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
	}
	for i, q := range p.Queries {
		tp = tp.WithTarget(gprom.NewDataqueryBuilder().
			Expr(q.Figure.Expr).
			LegendFormat(legend(l.By(), q.Suffix)).
			RefId(string(rune('A' + i))).
			Range())
	}
	return tp
}

// describe says what a panel shows and how it is computed.
func describe(p Panel) string {
	switch {
	case len(p.Queries) > 1:
		return p.Title + ": mean (sum over count) and percentiles (histogram_quantile of the summed bucket rates) over " + RateInterval + "."
	case !strings.Contains(p.Queries[0].Figure.Expr, RateInterval):
		return p.Queries[0].Figure.Title + ", as last scraped."
	}
	return p.Queries[0].Figure.Title + ", over " + RateInterval + "."
}

// thresholds are the lines a panel draws where a note of the report's
// starts: from the judgement table, as the alerts take them.
func thresholds(id string) []float64 {
	note := map[string]string{
		"live/kv_cache":                "kv_cache_pressure",
		"spec_decode/draft_acceptance": "draft_acceptance_low",
		"kv_offload/traffic":           "kv_offload_thrashing",
		"recurrent/capped":             "recurrent_raise_budget",
		"recurrent/cache":              "recurrent_over_budget",
	}[id]
	if note == "" {
		return nil
	}
	b, ok := analysis.NoteBand(note)
	if !ok || len(b.Limits) == 0 {
		return nil
	}
	switch note {
	case "kv_offload_thrashing":
		return b.Limits[1:2] // the payback limit; the first is evictions > 0
	}
	return b.Limits[:1]
}
