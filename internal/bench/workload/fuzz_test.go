package workload

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/stream"
)

// FuzzReadDataset: any file is read without a panic, as items that each
// have a message, or as an error naming the file; every item makes a body
// that is JSON.
func FuzzReadDataset(f *testing.F) {
	f.Add("{\"prompt\":\"a\",\"output_tokens\":3}\n{\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}\n")
	f.Add(`[{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"yo"}]}]`)
	f.Add("\xef\xbb\xbf{\"prompt\":\"\\u0000\"}\r\n")
	f.Add(`{"prompt":null,"max_tokens":1e3}`)
	f.Fuzz(func(t *testing.T, in string) {
		items, err := ReadDataset("d", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "d") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		for _, it := range items {
			if len(it.Messages) == 0 || it.Output < 0 {
				t.Fatalf("item %+v", it)
			}
			for _, api := range stream.APIs() {
				if b := (Shape{API: api, Model: "m"}).Body(it.Messages, it.Output, true); !json.Valid(b) {
					t.Fatalf("body %s", b)
				}
			}
		}
	})
}

// FuzzParseDist: any text is a distribution that draws within its bounds,
// or an error.
func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"512", "1..9", "100~10", "100~10:50..150", "~", "..", "1~0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		if d.Largest() > 1<<20 || d.StdDev > 1<<16 {
			return // drawing is fine, but slow to check here
		}
		syn := &Synthetic{Seed: 1, Prompt: Dist{Kind: Fixed, Mean: 1}, Output: d}
		for i := range 20 {
			n := syn.Output.draw(syn.rng(i))
			lo, hi := d.Min, d.Max
			if d.Kind == Fixed {
				lo, hi = d.Mean, d.Mean
			}
			if n < lo || n > hi {
				t.Fatalf("%q drew %d outside %d..%d", s, n, lo, hi)
			}
		}
	})
}
