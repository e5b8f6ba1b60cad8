package render

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/jsondoc"
	"github.com/inferscope/inferscope/internal/report"
)

// docTables maps each heading of docs/json.md that holds a field table to
// the JSON objects the table describes, as paths: "." between keys, "[]"
// for the elements of an array, "*" for any key of a map.
var docTables = map[string][]string{
	"Top level":                  {""},
	"`histograms`":               {"histograms.*"},
	"`capped`":                   {"histograms.*.capped"},
	"Each entry of `stated`":     {"histograms.*.stated.*"},
	"Each bucket":                {"histograms.*.buckets[]", "raw[].series[].buckets[]"},
	"`figures`":                  {"figures"},
	"Each entry of `break_even`": {"figures.break_even[]"},
	"`probe_trade`":              {"figures.probe_trade"},
	"`sections`":                 {"sections[]"},
	"Each row":                   {"sections[].rows[]"},
	"`table`":                    {"sections[].table"},
	"Each row of `table`":        {"sections[].table.rows[]"},
	"`notes`":                    {"notes[]"},
	"`raw`":                      {"raw[]"},
	"Each series":                {"raw[].series[]"},
	"Each quantile of a summary": {"raw[].series[].quantiles[]"},
	"Each trend":                 {"trends.*"},
	"Each heat strip":            {"heat.*"},
	"Each breakdown":             {"breakdowns.*"},
	"Each unit":                  {"breakdowns.*.units[]"},
	"`gpu`":                      {"gpu"},
	"Each device":                {"gpu.devices[]"},
}

// docMaps are the objects whose keys are data (names, window labels),
// not fields.
var docMaps = []string{"scalars", "histograms", "histograms.*.stated", "extra", "rates", "rates.*", "raw[].series[].labels", "trends", "heat", "breakdowns", "breakdowns.*.units[].figures", "gpu.figures", "gpu.devices[].figures"}

// documentedReport is fullReport with every field that is left out when
// empty filled in: a time source, a histogram's stated quantiles and what
// it lacks, and raw families of every type.
func documentedReport() *report.Report {
	r := fullReport()
	r.Version = "v1.2.3"
	r.TimeSource = "scrape"
	h := r.Histograms["request_prompt_tokens"]
	h.Stated = map[string]report.Stated{
		"p50": {Value: 8100, Kind: "interpolated", Lo: 7000, Hi: 9000},
		"p90": {Value: 30200, Kind: "at_most", Lo: 10000, Hi: 30200},
		"p99": {Value: 198000, Kind: "at_least", Lo: 198000, Hi: report.Number(math.Inf(1))},
	}
	h.Incomplete = []string{"_sum"}
	r.Histograms["request_prompt_tokens"] = h
	nan := report.Number(math.NaN())
	r.Trends = report.Map[*report.Trend]{"requests": {StepSeconds: 2, Values: []report.Number{nan, 1.5, 2}}}
	r.Heat = report.Map[*report.Heat]{"time_to_first_token_seconds": {StepSeconds: 2, LE: []string{"0.5", "+Inf"},
		Counts: [][]report.Number{nil, {3, 1}}}}
	r.Breakdowns = report.Map[*report.Breakdown]{
		"slots": {Unit: "slot", Status: "disabled", Why: "HTTP 501", Units: []report.Unit{}},
		"engines": {Unit: "engine", Status: "read", Units: []report.Unit{{ID: "0", Model: "m", State: "idle",
			Figures: report.Map[report.Number]{"requests_processing": 3}}}},
	}
	r.GPU = &report.GPU{Source: "http://gpu-box:9400/metrics", Kind: "dcgm", Status: "failed", Why: "a test", Window: "the last 5m",
		Seconds: 300, Readings: 150, Figures: report.Map[report.Number]{"power_watts": 350}, DecodeBound: "bandwidth",
		Throttle: []string{"power_cap"}, Devices: []report.GPUDevice{{ID: "0", Figures: report.Map[report.Number]{"gpu_power_watts": 350}}}}
	basis := "probe"
	r.Figures.TradeBasis = &basis
	r.Figures.ProbeTrade = &report.ProbeTrade{Source: "the probe of 2026-12-06 08:07 UTC", PromptTokens: 1e6, PromptLength: 1500,
		PrefillTokensPerSecond: 7800, GeneratedTokens: 2e5, ServerPerRequest: 40, DecodeBatch: 5.5, DecodeTokensPerSecond: 220,
		PrefillSeconds: 128, DecodeSeconds: 909, PrefillShare: 0.123, DecodeShare: 0.877}
	r.Raw = []report.RawFamily{
		{Name: "tabbyapi:requests_total", Type: "counter", Help: "Number of finished requests.",
			Series: []report.RawSeries{{Value: num(345)}}},
		{Name: "tabbyapi:time_to_first_token_seconds", Type: "histogram",
			Series: []report.RawSeries{{Labels: map[string]string{"model": "m"}, Count: num(2), Sum: num(0.5),
				Buckets: []report.Bucket{{LE: "0.5", Count: 2}, {LE: "+Inf", Count: 2}}}}},
		{Name: "rpc_seconds", Type: "summary",
			Series: []report.RawSeries{{Count: num(3), Sum: num(1.5), Quantiles: []report.Quantile{{Quantile: "0.99", Value: 0.9}}}}},
	}
	return r
}

// docs/json.md is the contract of --json: every field a report has is
// documented there with its type, and every documented field is in a full
// report.
func TestJSONMatchesDocs(t *testing.T) {
	// The bench's report, a probe's, a sweep's, a comparison and the
	// fleet's document: internal/bench, internal/bench/probe,
	// internal/bench/sweep and internal/fleet hold them to their tables.
	documented := jsondoc.Fields(t, jsondoc.Tables{Page: "../../docs/json.md", Bases: docTables,
		Others: []string{"Bench", "Probe", "Sweep", "Compare", "Fleet"}})
	if len(documented) < 60 {
		t.Fatalf("read %d documented fields from docs/json.md: its tables moved", len(documented))
	}
	seen := map[string]bool{}
	// walk checks v, found at path; field says path ends in a field name
	// (not an array element or a map entry, which the tables do not list).
	var walk func(path string, v any, field bool)
	walk = func(path string, v any, field bool) {
		if field {
			if types, ok := documented[path]; !ok {
				t.Errorf("%s is in the JSON but not in docs/json.md", path)
			} else if k := jsondoc.Kind(v); !slices.Contains(types, k) {
				t.Errorf("%s is %s, but docs/json.md says %s", path, k, strings.Join(types, " or "))
			}
			seen[path] = true
		}
		switch v := v.(type) {
		case map[string]any:
			entries := slices.Contains(docMaps, path)
			for k, e := range v {
				if entries {
					walk(jsondoc.Join(path, "*"), e, false)
				} else {
					walk(jsondoc.Join(path, k), e, true)
				}
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e, false)
			}
		}
	}
	walk("", decode(t, renderJSON(t, documentedReport())), false)
	for path := range documented {
		if !seen[path] {
			t.Errorf("docs/json.md documents %s, which a full report does not have", path)
		}
	}
}
