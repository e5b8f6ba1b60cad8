package proxy

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestOpenAIClient: the official Go client, through the proxy to the
// simulator's API, gets its answers (streamed and not) and its usage; with
// --inject-usage a stream that did not ask for usage still gives the proxy
// its token counts, and the client, which reads choices[0] of every chunk,
// never meets the chunk that carried them.
func TestOpenAIClient(t *testing.T) {
	srv, p, base := startDemo(t, Options{InjectUsage: true})
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Why is the sky blue?")}

	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-chat", Messages: msgs, MaxTokens: openai.Int(7)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.CompletionTokens != 7 || resp.Choices[0].Message.Content == "" || resp.Choices[0].FinishReason != "length" {
		t.Errorf("non-streamed: usage %+v, choice %+v", resp.Usage, resp.Choices[0])
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "sim-chat", Messages: msgs, MaxTokens: openai.Int(9)})
	var text string
	chunks := 0
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			t.Fatalf("chunk %d has no choices: a client indexing choices[0] would crash: %s", chunks, c.RawJSON())
		}
		text += c.Choices[0].Delta.Content
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text == "" || chunks < 3 { // the role, tokens (several a chunk at 50x speed), the finish
		t.Errorf("streamed %d chunks, text %q", chunks, text)
	}

	comp, err := client.Completions.New(ctx, openai.CompletionNewParams{Model: "sim-complete", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("The sky is")}, MaxTokens: openai.Int(3)})
	if err != nil {
		t.Fatal(err)
	}
	if comp.Usage.CompletionTokens != 3 {
		t.Errorf("completions usage %+v", comp.Usage)
	}

	waitIdle(t, p)
	pub := scrapeProxy(t, p)
	truth := srv.Totals()
	if got := pub.vals["tokens_predicted_total"]["sim-chat"]; got != 7+9 {
		t.Errorf("tokens_predicted_total{sim-chat} = %v, want 16 (7 answered, 9 streamed with injected usage)", got)
	}
	if got := pub.sum("tokens_predicted_total"); got != float64(truth.GeneratedTokens) {
		t.Errorf("tokens_predicted_total over models %v, the simulator generated %d", got, truth.GeneratedTokens)
	}
	if got := pub.counts["time_to_first_token_seconds"]["sim-chat"]; got != 1 {
		t.Errorf("TTFT count %v, want 1 (the one stream)", got)
	}
}
