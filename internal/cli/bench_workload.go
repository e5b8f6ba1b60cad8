package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/spf13/cobra"

	benchload "github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// Defaults of what the bench sends, as vLLM's random dataset's (a 1,024-
// token prompt is longer than many small servers' slots: 512).
const (
	defaultPromptTokens = "512"
	defaultOutputTokens = "128"
)

// workloadFlags are what the bench sends: synthetic prompts of controlled
// length, or a dataset.
type workloadFlags struct {
	prompt, output string
	prefix         int
	prefixShare    float64
	defeatCache    bool
	letStop        bool
	dataset        string

	// Set by check.
	promptDist, outputDist workload.Dist
	items                  []workload.Item
}

func (w *workloadFlags) define(cmd *cobra.Command) {
	w.prompt, w.output, w.prefixShare = defaultPromptTokens, defaultOutputTokens, 1
	f := func(name, usage string) flagDef { return flagDef{name: name, noFiles: true, usage: usage} }
	f("prompt-tokens", "synthetic prompts of `L` tokens: 512 (fixed), 256..1024 (uniform), 512~128 (normal, within 3 deviations) or 512~128:64..1024 (normal within bounds)").string(cmd, &w.prompt)
	f("output-tokens", "ask for answers of `L` tokens, written as --prompt-tokens (held to it with ignore_eos and min_tokens where the API takes them; 0 leaves it to the server)").string(cmd, &w.output)
	f("prefix-tokens", "begin prompts with a shared prefix of `N` tokens, to exercise the prefix cache on purpose").int(cmd, &w.prefix)
	f("prefix-share", "the share `F` of requests (0 to 1) that begin with --prefix-tokens").float(cmd, &w.prefixShare)
	f("defeat-cache", "begin every prompt with words of its own, so that none is served from the prefix cache").bool(cmd, &w.defeatCache)
	f("let-stop", "let the model end an answer early at its own end of sequence (no ignore_eos, no min_tokens)").bool(cmd, &w.letStop)
	flagDef{name: "dataset", usage: "send the prompts of `FILE` instead: JSON lines of {\"prompt\"} or {\"messages\"} with an optional \"output_tokens\", or ShareGPT conversations"}.string(cmd, &w.dataset)
}

// check reads the workload's flags and the dataset, before anything is
// sent.
func (w *workloadFlags) check(set map[string]bool) error {
	hint := "write a length as 512, 256..1024, 512~128 or 512~128:64..1024"
	if w.dataset != "" {
		for _, name := range []string{"prompt-tokens", "prefix-tokens", "prefix-share", "defeat-cache"} {
			if set[name] {
				return usagef("leave out --"+name+": a dataset's prompts are its own", "--%s does not go with --dataset", name)
			}
		}
	}
	var err error
	if w.promptDist, err = workload.ParseDist(w.prompt); err != nil {
		return usagef(hint, "--prompt-tokens: %v", err)
	}
	if w.outputDist, err = workload.ParseDist(w.output); err != nil {
		return usagef(hint, "--output-tokens: %v", err)
	}
	switch {
	case w.dataset == "" && w.promptDist.Largest() < 1:
		return usagef(hint, "--prompt-tokens %s: a prompt has at least one token", w.prompt)
	case math.IsNaN(w.prefixShare) || w.prefixShare < 0 || w.prefixShare > 1:
		return usagef("give --prefix-share from 0 to 1", "--prefix-share %v is not a share", w.prefixShare)
	case set["prefix-share"] && w.prefix == 0:
		return usagef("add --prefix-tokens N", "--prefix-share is the share of requests that begin with --prefix-tokens")
	case w.prefix < 0:
		return usagef("give --prefix-tokens 0 or more", "--prefix-tokens %d is negative", w.prefix)
	}
	if w.dataset == "" {
		s := workload.Synthetic{Prompt: w.promptDist, Output: w.outputDist, Prefix: w.prefix, PrefixShare: w.prefixShare}
		if err := s.Check(); err != nil {
			return usagef("leave room after the prefix: --prefix-tokens below the shortest prompt", "%v", err)
		}
		return nil
	}
	f, err := os.Open(w.dataset)
	if err != nil {
		return usagef("check the path of --dataset", "cannot read the dataset: %v", termsafe.Text(err.Error()))
	}
	defer f.Close()
	items, err := workload.ReadDataset(w.dataset, f)
	if err != nil {
		var de *workload.DatasetError
		if errors.As(err, &de) && de.Line > 0 {
			return usagef("every line is one JSON object: {\"prompt\": \"...\"} or {\"messages\": [...]}", "--dataset %s", termsafe.Text(err.Error()))
		}
		return usagef("give a JSON lines file, or a ShareGPT JSON file", "--dataset %s", termsafe.Text(err.Error()))
	}
	w.items = items
	return nil
}

// maxTokens is the longest request in tokens (prompt and output), 0
// where it cannot be known before sending (a dataset).
func (w *workloadFlags) maxTokens() int {
	if w.dataset != "" {
		return 0
	}
	return w.promptDist.Largest() + w.outputDist.Largest()
}

// workloadInfo is what the report needs of a workload.
type workloadInfo struct {
	words, note string // what is sent, and how its lengths were made
	prefixMeant *float64
	fixedOutput int
}

// source builds what the run sends to t, its synthetic prompts' lengths
// calibrated against the server: its /tokenize where it has one, else the
// usage of two probe requests.
func (w *workloadFlags) source(ctx context.Context, t benchload.Target, seed uint64) (workload.Source, workloadInfo, error) {
	shape := workload.Shape{API: t.API, Model: t.Model}
	fixed := !w.letStop && workload.FixedOutput(t.API)
	var info workloadInfo
	if fixed && w.outputDist.Kind == workload.Fixed && w.outputDist.Mean > 0 {
		info.fixedOutput = w.outputDist.Mean
	}
	if w.dataset != "" {
		out := 0
		if w.outputDist.Kind == workload.Fixed {
			out = w.outputDist.Mean
		}
		info.words = fmt.Sprintf("dataset %s", termsafe.Text(w.dataset))
		info.note = units.Integer(float64(len(w.items))) + " prompts, in a seeded order"
		return &workload.Dataset{Shape: shape, Items: w.items, Output: out, FixedOutput: fixed, Seed: seed}, info, nil
	}
	cal, err := w.calibrate(ctx, t, shape)
	if err != nil {
		return nil, info, err
	}
	s := &workload.Synthetic{Shape: shape, Prompt: w.promptDist, Output: w.outputDist, FixedOutput: fixed, Prefix: w.prefix,
		PrefixShare: w.prefixShare, UniqueFirst: w.defeatCache, Seed: seed, Calibration: cal}
	meant := 0.0
	if w.prefix > 0 && w.promptDist.Mean > 0 {
		meant = w.prefixShare * float64(w.prefix) / float64(w.promptDist.Mean)
	}
	info.prefixMeant = &meant
	info.words = fmt.Sprintf("prompts of %s tokens, answers of %s", w.prompt, w.output)
	if !fixed && w.outputDist.Largest() > 0 {
		info.words += " at most"
	}
	info.note = calibrationWords(cal.Method)
	if w.prefix > 0 {
		info.note += fmt.Sprintf("; %s begin with a shared prefix of %d tokens", units.Percent(w.prefixShare), w.prefix)
	}
	return s, info, nil
}

func calibrationWords(method string) string {
	switch method {
	case "tokenize":
		return "lengths aligned with the server's /tokenize"
	case "usage":
		return "lengths calibrated from the server's usage"
	}
	return "lengths estimated: one token a word"
}

// calibrate works out how the server counts a synthetic prompt.
func (w *workloadFlags) calibrate(ctx context.Context, t benchload.Target, shape workload.Shape) (workload.Calibration, error) {
	client := benchload.Client(t)
	var tok workload.Tokenizer
	if st, err := workload.FindTokenizer(ctx, client, t.Base, t.Model); err == nil {
		tok = st
	} else if ctx.Err() != nil {
		return workload.Calibration{}, ctx.Err()
	}
	usage := func(ctx context.Context, r workload.Request) (int, error) {
		rec, err := benchload.Probe(ctx, t, r)
		switch {
		case err != nil:
			return 0, err
		case rec.Error != "":
			return 0, fmt.Errorf("%s %s", rec.Error, rec.ErrorDetail)
		case rec.PromptTokens < 0:
			return 0, errors.New("the answer said no prompt tokens")
		}
		return rec.PromptTokens, nil
	}
	cal, err := workload.Calibrate(ctx, shape, tok, usage)
	if err != nil {
		if ctx.Err() != nil {
			return cal, ctx.Err()
		}
		// Lengths as estimated, said so in the report: the run can go on.
		return workload.Calibration{Method: "estimate"}, nil
	}
	return cal, nil
}
