package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A streamed token as vLLM and Ollama's OpenAI endpoint send it.
var (
	sseToken    = []byte(`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1735689600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	ndjsonToken = []byte(`{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":" word"},"done":false}` + "\n")
)

// streaming is an exchange past its first token, as the meter sees it.
func streaming(sse bool) *exchange {
	x := &exchange{p: &Proxy{o: Options{MaxResponse: DefaultMaxResponse}, now: time.Now}, stream: true, sse: sse, start: time.Now()}
	x.firstToken, x.model = x.start, "m"
	return x
}

// BenchmarkMeterToken is the proxy's work per streamed token once the
// first has passed: scanning the chunk, nothing decoded, nothing allocated.
func BenchmarkMeterToken(b *testing.B) {
	for _, c := range []struct {
		name  string
		sse   bool
		token []byte
	}{{"openai-sse", true, sseToken}, {"ollama-ndjson", false, ndjsonToken}} {
		b.Run(c.name, func(b *testing.B) {
			x := streaming(c.sse)
			now := time.Now()
			b.SetBytes(int64(len(c.token)))
			b.ReportAllocs()
			for b.Loop() {
				x.feed(c.token, now)
			}
		})
	}
}

// BenchmarkFilterToken is the same through --inject-usage's event filter,
// which holds each event until it is whole.
func BenchmarkFilterToken(b *testing.B) {
	x := streaming(true)
	src := &repeatReader{chunk: sseToken}
	f := &filter{meter: &meter{x: x, body: io.NopCloser(src)}}
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(sseToken)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

type repeatReader struct{ chunk []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.chunk), nil }

// firstByte times one request's time to the first byte of its answer.
func firstByte(tb testing.TB, client *http.Client, url string) time.Duration {
	t0 := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadByte(); err != nil {
		tb.Fatal(err)
	}
	d := time.Since(t0)
	io.Copy(io.Discard, br)
	resp.Body.Close()
	return d
}

// BenchmarkAddedTTFB is the time to first byte the proxy adds: the same
// stream requested alternately from the upstream and through the proxy, on
// loopback, keep-alive connections; it reports p50 and p99 of each and the
// difference of the p99s. It runs with no other traffic, and with 1,000
// other streams open through the proxy, each sending a token every gap.
func BenchmarkAddedTTFB(b *testing.B) {
	for _, c := range []struct {
		name    string
		streams int
		gap     time.Duration
	}{{"idle", 0, 0}, {"1000-streams-1s", 1000, time.Second}, {"1000-streams-100ms", 1000, 100 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) { addedTTFB(b, c.streams, c.gap) })
	}
}

func addedTTFB(b *testing.B, streams int, gap time.Duration) {
	stop := make(chan struct{})
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		if r.URL.RawQuery == "background" {
			for {
				select {
				case <-stop:
					w.Write([]byte("data: [DONE]\n\n"))
					return
				case <-r.Context().Done():
					return
				case <-time.After(gap):
					w.Write(sseToken)
					w.(http.Flusher).Flush()
				}
			}
		}
		w.Write([]byte("data: [DONE]\n\n"))
	}))
	up.Config.MaxHeaderBytes = 1 << 16
	up.Start()
	defer up.Close()
	_, srv := start(b, up.URL, Options{})
	var background sync.WaitGroup
	if streams > 0 {
		bg := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
		var opened sync.WaitGroup
		opened.Add(streams)
		for range streams {
			background.Go(func() {
				resp, err := bg.Post(srv.URL+"/v1/chat/completions?background", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
				opened.Done()
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		opened.Wait()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var direct, proxied []time.Duration
	for range 50 { // warm both paths' connections
		firstByte(b, client, up.URL+"/v1/chat/completions")
		firstByte(b, client, srv.URL+"/v1/chat/completions")
	}
	for b.Loop() {
		direct = append(direct, firstByte(b, client, up.URL+"/v1/chat/completions"))
		proxied = append(proxied, firstByte(b, client, srv.URL+"/v1/chat/completions"))
	}
	close(stop)
	background.Wait()
	pct := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds())
	}
	b.ReportMetric(pct(direct, 0.5), "direct-p50-µs")
	b.ReportMetric(pct(proxied, 0.5), "proxy-p50-µs")
	b.ReportMetric(pct(direct, 0.99), "direct-p99-µs")
	b.ReportMetric(pct(proxied, 0.99), "proxy-p99-µs")
	b.ReportMetric(pct(proxied, 0.99)-pct(direct, 0.99), "added-p99-µs")
}

// loadRun opens n streams at once to url, each of tokens chunks gap apart
// from the upstream, holds them all open, and returns the process's CPU
// time for the run and the heap and stack in use while every stream was
// open.
func loadRun(tb testing.TB, url string, n int) (cpu time.Duration, inUse uint64) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	defer client.CloseIdleConnections()
	var opened, wg sync.WaitGroup
	opened.Add(n)
	release := make(chan struct{})
	before := rusage()
	for range n {
		wg.Go(func() {
			resp, err := client.Post(url, "application/json", strings.NewReader(`{"model":"m","stream":true}`))
			if err != nil {
				tb.Error(err)
				opened.Done()
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			br.ReadString('\n') // the first event: the stream is open end to end
			opened.Done()
			<-release
			io.Copy(io.Discard, br)
		})
	}
	opened.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	inUse = ms.HeapInuse + ms.StackInuse
	close(release)
	wg.Wait()
	return rusage() - before, inUse
}

func rusage() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLoad is 1,000 concurrent streams of 50 tokens, 20 ms apart,
// from an upstream in this process, read directly and then through the
// proxy: the difference in the process's CPU time per streamed token, and
// in memory held per open stream, is the proxy's.
func BenchmarkLoad(b *testing.B) {
	const streams, tokens = 1000, 50
	upstream := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		w.Write(sseToken)
		fl.Flush()
		for range tokens - 1 {
			time.Sleep(20 * time.Millisecond)
			w.Write(sseToken)
			fl.Flush()
		}
		w.Write([]byte(`data: {"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":50}}` + "\n\ndata: [DONE]\n\n"))
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(upstream))
	up.Config.MaxHeaderBytes = 1 << 16
	up.Start()
	defer up.Close()
	p, srv := start(b, up.URL, Options{})
	var directCPU, proxyCPU time.Duration
	var directMem, proxyMem uint64
	for b.Loop() {
		c, m := loadRun(b, up.URL+"/v1/chat/completions", streams)
		directCPU, directMem = directCPU+c, max(directMem, m)
		c, m = loadRun(b, srv.URL+"/v1/chat/completions", streams)
		proxyCPU, proxyMem = proxyCPU+c, max(proxyMem, m)
	}
	waitIdle(b, p)
	if got := scrapeProxy(b, p).sum("requests_total"); got != float64(streams*b.N) {
		b.Errorf("the proxy recorded %v streams, want %d", got, streams*b.N)
	}
	tok := float64(streams * tokens * b.N)
	b.ReportMetric(float64(directCPU.Nanoseconds())/tok, "direct-cpu-ns/token")
	b.ReportMetric(float64(proxyCPU.Nanoseconds())/tok, "proxied-cpu-ns/token")
	b.ReportMetric(float64((proxyCPU-directCPU).Nanoseconds())/tok, "added-cpu-ns/token")
	b.ReportMetric(float64(int64(proxyMem)-int64(directMem))/streams, "added-bytes/stream")
}

// TestNoPerTokenAllocations: the proxy's allocations for a stream do not
// grow with its length. A stream of 1,000 tokens and one of 100, each
// through the proxy and directly: what the proxy adds is nearly the same
// for both (counted, not timed; the upstream and the client allocate the
// same either way). The proxy's own code allocates nothing per token
// (BenchmarkMeterToken); what remains, about 0.03 per token, is net/http's
// chunked writer formatting the size of a write above 255 bytes, when
// several tokens arrived in one read.
func TestNoPerTokenAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without the race detector")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 100
		if strings.Contains(r.URL.RawQuery, "long") {
			n = 1000
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for range n {
			w.Write(sseToken)
			fl.Flush()
		}
		w.Write([]byte("data: [DONE]\n\n"))
	}))
	defer up.Close()
	_, srv := start(t, up.URL, Options{})
	client := &http.Client{Transport: &http.Transport{}}
	allocs := func(url string) float64 {
		return testing.AllocsPerRun(20, func() {
			resp, err := client.Post(url, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	added := func(q string) float64 {
		return allocs(srv.URL+"/v1/chat/completions"+q) - allocs(up.URL+"/v1/chat/completions"+q)
	}
	short, long := added(""), added("?long")
	t.Logf("allocations the proxy adds: %.0f for 100 tokens, %.0f for 1,000", short, long)
	if perToken := (long - short) / 900; perToken > 0.1 {
		t.Errorf("the proxy allocates %.2f times more per streamed token", perToken)
	}
}
