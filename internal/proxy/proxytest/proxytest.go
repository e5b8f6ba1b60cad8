// Package proxytest holds what the proxy's tests and the command's share:
// an upstream that streams slowly, and a client of it.
package proxytest

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Ticks is an OpenAI upstream that streams n content events gap apart,
// then a usage chunk (completion_tokens n) and [DONE]; with n < 0 it
// streams until the client goes.
func Ticks(n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; n < 0 || i < n; i++ {
			w.Write([]byte(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(gap):
			}
		}
		w.Write([]byte(`data: {"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":` + strconv.Itoa(n) + `}}` + "\n\ndata: [DONE]\n\n"))
	}
}

// OpenStream asks base for a streamed chat completion and reads its first
// event.
func OpenStream(t testing.TB, base string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return resp, br
}

// Status is the status of GET url; 0 when it cannot be had.
func Status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
