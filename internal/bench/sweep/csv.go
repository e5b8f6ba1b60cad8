package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/inferscope/inferscope/internal/report"
)

// csvFigures are the CSV's figures, each written as four columns: its mean
// over the step's runs, then _min, _max and _stdev.
var csvFigures = []struct {
	name string
	get  func(Summary) Spread
}{
	{"request_rate", func(s Summary) Spread { return s.RequestRate }},
	{"output_token_rate", func(s Summary) Spread { return s.OutputRate }},
	{"goodput_rate", func(s Summary) Spread { return s.GoodputRate }},
	{"good_share", func(s Summary) Spread { return s.GoodShare }},
	{"ttft_p50", func(s Summary) Spread { return s.TTFTP50 }},
	{"ttft_p99", func(s Summary) Spread { return s.TTFTP99 }},
	{"tpot_p50", func(s Summary) Spread { return s.TPOTP50 }},
	{"tpot_p99", func(s Summary) Spread { return s.TPOTP99 }},
	{"e2e_p50", func(s Summary) Spread { return s.E2EP50 }},
	{"e2e_p99", func(s Summary) Spread { return s.E2EP99 }},
	{"itl_p99", func(s Summary) Spread { return s.ITLP99 }},
	{"server_waiting", func(s Summary) Spread { return s.Waiting }},
	{"server_kv_peak", func(s Summary) Spread { return s.KVPeak }},
	{"server_queue", func(s Summary) Spread { return s.Queue }},
	{"server_prefill", func(s Summary) Spread { return s.Prefill }},
}

// CSV writes the steps of res, a row a step in the order run: the load,
// the counts, each figure's mean and spread (seconds for times, shares as
// fractions), the verdict, the step against the target and its place at
// the knee ("met" for the knee's step, "broke" for the one above). An
// unknown value is an empty cell, never 0.
func CSV(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	head := []string{"step", "phase", "mode", "concurrency", "rate", "runs", "sent", "completed", "failed"}
	for _, f := range csvFigures {
		head = append(head, f.name, f.name+"_min", f.name+"_max", f.name+"_stdev")
	}
	head = append(head, "verdict", "slo_good", "slo_of", "slo_meets", "knee")
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("sweep: writing CSV: %w", err)
	}
	for _, s := range res.Steps {
		sm := s.Summary
		row := []string{strconv.Itoa(s.Index), s.Phase, s.Mode, strconv.Itoa(s.Concurrency), cell(s.Rate),
			strconv.Itoa(sm.Runs), strconv.Itoa(sm.Sent), strconv.Itoa(sm.Completed), strconv.Itoa(sm.Failed)}
		for _, f := range csvFigures {
			sp := f.get(sm)
			row = append(row, cell(sp.Mean), cell(sp.Min), cell(sp.Max), cell(sp.Stdev))
		}
		row = append(row, sm.Verdict)
		if s.SLO != nil {
			row = append(row, strconv.Itoa(s.SLO.Good), strconv.Itoa(s.SLO.Of), strconv.FormatBool(s.SLO.Meets))
		} else {
			row = append(row, "", "", "")
		}
		knee := ""
		if k := res.Knee; k != nil {
			switch s.Index {
			case k.Step:
				knee = "met"
			case k.BrokeStep:
				knee = "broke"
			}
		}
		row = append(row, knee)
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("sweep: writing CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("sweep: writing CSV: %w", err)
	}
	return nil
}

// cell writes a number as JSON does; unknown is empty.
func cell(v report.Number) string {
	if !known(v) {
		return ""
	}
	return strconv.FormatFloat(float64(v), 'g', -1, 64)
}
