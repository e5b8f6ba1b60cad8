package probe

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// JSON writes r as one indented JSON object (docs/json.md).
func JSON(w io.Writer, r *Result) error {
	return render.JSONValue(w, r, render.JSONOptions{})
}

// maxFile bounds a probe file read back: a probe of a hundred points is
// some tens of kilobytes.
const maxFile = 16 << 20

// Read reads a probe's JSON as [JSON] wrote it, refusing what is not one.
func Read(rd io.Reader) (*Result, error) {
	b, err := io.ReadAll(io.LimitReader(rd, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("larger than a probe's JSON (%d MiB)", maxFile>>20)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a probe's JSON: %w", err)
	}
	switch {
	case r.Kind != "probe":
		return nil, errors.New(`not a probe's JSON: its "kind" is not "probe" (write one with inferscope bench --probe ... -o json)`)
	case r.Schema != Schema:
		return nil, fmt.Errorf("a probe of schema %d; this build reads schema %d", r.Schema, Schema)
	}
	return &r, nil
}

// Speeds are the probe's speeds as the analysis weighs them: prefill by
// prompt length and one request's decode by batch size, each from the
// server's own time where every point has it, else from the client's.
// A figure that is unknown leaves its point out.
func (r *Result) Speeds() *analysis.PhaseSpeeds {
	out := &analysis.PhaseSpeeds{Model: r.Model, Source: "the probe"}
	if !r.StartedAt.IsZero() {
		out.Source += " of " + r.StartedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	if p := r.Prefill; p != nil {
		server := len(p.Points) > 0
		for _, pt := range p.Points {
			server = server && pt.Server != nil && pt.Server.N > 0
		}
		out.PrefillFrom = "timed by the client's TTFT"
		if server {
			out.PrefillFrom = "timed by the server"
		}
		for _, pt := range p.Points {
			v, length := pt.Client.Median, float64(pt.Length)
			if server {
				v = pt.Server.Median
			}
			// The curve is read at the tokens a request computes: the
			// prompt as the server counted it, less what a cache served.
			if known(pt.PromptTokens) {
				length = float64(pt.PromptTokens)
				if known(pt.CachedTokens) {
					length -= float64(pt.CachedTokens)
				}
			}
			if known(v) && v > 0 {
				out.Prefill = append(out.Prefill, analysis.PrefillSpeed{Length: length, TokensPerSecond: float64(v)})
			}
		}
	}
	if d := r.Decode; d != nil {
		server := len(d.Points) > 0
		for _, pt := range d.Points {
			server = server && pt.Server != nil && pt.Server.N > 0
		}
		out.DecodeFrom = "timed by the client"
		if server {
			out.DecodeFrom = "timed by the server"
		}
		for _, pt := range d.Points {
			v := pt.PerRequest.Median
			if server {
				v = pt.Server.Median
			}
			if known(v) && v > 0 {
				out.Decode = append(out.Decode, analysis.DecodeSpeed{Batch: float64(pt.Batch), PerRequest: float64(v)})
			}
		}
	}
	return out
}

// Weigh is what the analysis weighs of one or two probes (a prefill
// probe and a decode probe, or one of both): the prefill speeds of the
// one that has them, the decode speeds of the one that has them. It
// refuses probes that leave either out, or give one twice.
func Weigh(rs []*Result) (*analysis.PhaseSpeeds, error) {
	var pre, dec *Result
	for _, r := range rs {
		if r.Prefill != nil && len(r.Prefill.Points) > 0 {
			if pre != nil {
				return nil, errors.New("two probes give prefill speeds: give one prefill probe and one decode probe")
			}
			pre = r
		}
		if r.Decode != nil && len(r.Decode.Points) > 0 {
			if dec != nil {
				return nil, errors.New("two probes give decode speeds: give one prefill probe and one decode probe")
			}
			dec = r
		}
	}
	switch {
	case pre == nil && dec == nil:
		return nil, errors.New("the probe has no point that completed")
	case pre == nil:
		return nil, errors.New("no prefill speeds: the trade needs both phases' (add a probe of --probe prefill)")
	case dec == nil:
		return nil, errors.New("no decode speeds: the trade needs both phases' (add a probe of --probe decode)")
	}
	out := pre.Speeds()
	d := dec.Speeds()
	out.Decode, out.DecodeFrom = d.Decode, d.DecodeFrom
	switch {
	case len(out.Prefill) == 0:
		return nil, errors.New("the prefill probe has no speed (no measured request completed)")
	case len(out.Decode) == 0:
		return nil, errors.New("the decode probe has no speed (no measured request completed)")
	}
	if dec != pre {
		out.Source = strings.Replace(pre.Speeds().Source, "the probe", "the prefill probe", 1) + " and " + strings.Replace(d.Source, "the probe", "the decode probe", 1)
		if dec.Model != pre.Model {
			return nil, fmt.Errorf("the prefill probe is of %s and the decode probe of %s: give probes of one model", termsafe.Quote(pre.Model), termsafe.Quote(dec.Model))
		}
	}
	// The analysis reads the curves in order.
	slices.SortStableFunc(out.Prefill, func(a, b analysis.PrefillSpeed) int { return cmp.Compare(a.Length, b.Length) })
	slices.SortStableFunc(out.Decode, func(a, b analysis.DecodeSpeed) int { return cmp.Compare(a.Batch, b.Batch) })
	return out, nil
}
