package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/render"
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
		out.PrefillFrom = "client TTFT"
		if server {
			out.PrefillFrom = "the server's prefill time"
		}
		for _, pt := range p.Points {
			v, length := pt.Client.Median, float64(pt.Length)
			if server {
				v = pt.Server.Median
			}
			if known(pt.PromptTokens) {
				length = float64(pt.PromptTokens)
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
		out.DecodeFrom = "the client's token times"
		if server {
			out.DecodeFrom = "the server's decode time"
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
