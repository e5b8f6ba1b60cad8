package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/bench"
	benchload "github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
)

// workloadFlags are what the bench sends: TEMPORARY until package workload
// builds sources (synthetic lengths, shared prefixes, datasets).
type workloadFlags struct {
	promptTokens, outputTokens int
}

func (w *workloadFlags) define(cmd *cobra.Command) {
	if w.promptTokens == 0 {
		w.promptTokens, w.outputTokens = 128, 64
	}
	flagDef{name: "prompt-tokens", noFiles: true, usage: "prompts of `N` tokens"}.int(cmd, &w.promptTokens)
	flagDef{name: "output-tokens", noFiles: true, usage: "answers of `N` tokens"}.int(cmd, &w.outputTokens)
}

// workloadInfo is what the report and the checks need of a workload.
type workloadInfo struct {
	words       string
	maxTokens   int
	prefixMeant *float64
	fixedOutput int
}

func (w *workloadFlags) source(_ context.Context, api benchload.API, m bench.Model, seed uint64) (workload.Source, workloadInfo, error) {
	info := workloadInfo{words: fmt.Sprintf("synthetic: prompts of about %d tokens, answers of %d", w.promptTokens, w.outputTokens),
		maxTokens: w.promptTokens + w.outputTokens, fixedOutput: w.outputTokens}
	zero := 0.0
	info.prefixMeant = &zero
	return fixedSource{api: api, model: m.ID, prompt: w.promptTokens, output: w.outputTokens}, info, nil
}

type fixedSource struct {
	api            benchload.API
	model          string
	prompt, output int
}

func (s fixedSource) Next(i int) workload.Request {
	text := fmt.Sprintf("%d ", i) + strings.Repeat("word ", max(s.prompt-1, 0))
	var body map[string]any
	switch s.api {
	case benchload.ChatCompletions:
		body = map[string]any{"model": s.model, "messages": []any{map[string]any{"role": "user", "content": text}},
			"max_tokens": s.output, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}}
	case benchload.Completions:
		body = map[string]any{"model": s.model, "prompt": text, "max_tokens": s.output, "ignore_eos": true, "stream": true,
			"stream_options": map[string]any{"include_usage": true}}
	case benchload.OllamaChat:
		body = map[string]any{"model": s.model, "messages": []any{map[string]any{"role": "user", "content": text}}, "stream": true,
			"options": map[string]any{"num_predict": s.output}}
	default:
		body = map[string]any{"model": s.model, "prompt": text, "stream": true, "options": map[string]any{"num_predict": s.output}}
	}
	b, _ := json.Marshal(body)
	return workload.Request{Body: b, PromptTokens: s.prompt, OutputTokens: s.output, Fixed: true}
}
