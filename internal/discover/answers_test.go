package discover

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// Each reader takes what it knows from the answers servers give, and
// nothing from what they do not: an answer of another shape is nothing,
// never an error that would hide the server.
func TestAnswers(t *testing.T) {
	// llama.cpp b10309 /props (tools/server/server-context.cpp, get_props),
	// and a router's own (server-models.cpp, get_router_props).
	if got := parseProps([]byte(`{"default_generation_settings":{},"total_slots":2,"model_alias":"tiny-llama","model_path":"/tmp/peers/tiny-llama.gguf","build_info":"b10309-82bb48500","endpoint_metrics":true}`)); got != (props{"b10309-82bb48500", "tiny-llama"}) {
		t.Errorf("props: %+v", got)
	}
	if got := parseProps([]byte(`{"role":"router","max_instances":4,"model_alias":"llama-server","model_path":"none","build_info":"b10309-82bb48500"}`)); got != (props{build: "b10309-82bb48500"}) {
		t.Errorf("router props: %+v", got)
	}
	// TGI's /info (router/src/lib.rs, struct Info).
	if v, m := parseInfo([]byte(`{"model_id":"bigscience/bloom-560m","model_dtype":"torch.float16","version":"3.3.7","sha":null}`)); v != "3.3.7" || m != "bigscience/bloom-560m" {
		t.Errorf("info: %q %q", v, m)
	}
	if v := parseVersion([]byte(`{"version":"0.11.1"}`)); v != "0.11.1" {
		t.Errorf("version: %q", v)
	}
	for _, body := range []string{`[]`, `{"version":3}`, `not json`, `{"data":"x"}`} {
		if v := parseVersion([]byte(body)); v != "" {
			t.Errorf("version of %s: %q", body, v)
		}
	}
	// A router's /v1/models with each model's status; an OpenAI list
	// without; an empty list is a list; a list of another shape is not.
	got, ok := parseModels([]byte(`{"data":[{"id":"a","status":{"value":"loaded","args":["llama-server"]}},{"id":"b","status":{"value":"unloaded","failed":true,"exit_code":1}},{"id":""}],"object":"list"}`))
	if !ok || !reflect.DeepEqual(got, []Model{{"a", "loaded"}, {"b", "unloaded"}}) {
		t.Errorf("router models: %v %v", got, ok)
	}
	got, ok = parseModels([]byte(`{"object":"list","data":[{"id":"m","object":"model","status":"ready"}]}`))
	if !ok || !reflect.DeepEqual(got, []Model{{ID: "m"}}) {
		t.Errorf("openai models: %v %v", got, ok)
	}
	if got, ok := parseModels([]byte(`{"object":"list","data":[]}`)); !ok || len(got) != 0 {
		t.Errorf("empty list: %v %v", got, ok)
	}
	for _, body := range []string{`{"models":[]}`, `[]`, `{"data":{}}`} {
		if _, ok := parseModels([]byte(body)); ok {
			t.Errorf("%s read as a list of models", body)
		}
	}
	if got := parseOllamaPS([]byte(`{"models":[{"name":"llama3.2:3b","model":"llama3.2:3b","size":3}]}`)); !reflect.DeepEqual(got, []Model{{"llama3.2:3b", "loaded"}}) {
		t.Errorf("ollama ps: %v", got)
	}
}

// FuzzAnswers: whatever a server answers, the readers keep only short
// strings without control characters, and never more than maxModels.
func FuzzAnswers(f *testing.F) {
	f.Add([]byte(`{"version":"0.11.1"}`))
	f.Add([]byte(`{"model_alias":"tiny","build_info":"b1","role":"router"}`))
	f.Add([]byte(`{"data":[{"id":"a","status":{"value":"loaded"}}]}`))
	f.Add([]byte(`{"models":[{"name":"x"}]}`))
	f.Add([]byte(`{"version":"\u001b[31mred\u001b[0m","model_id":"` + strings.Repeat("m", 300) + `"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var strs []string
		strs = append(strs, parseVersion(body))
		pr := parseProps(body)
		strs = append(strs, pr.build, pr.model)
		v, m := parseInfo(body)
		strs = append(strs, v, m)
		ms, _ := parseModels(body)
		ps := parseOllamaPS(body)
		if len(ms) > maxModels || len(ps) > maxModels {
			t.Fatalf("%d and %d models kept", len(ms), len(ps))
		}
		for _, m := range append(ms, ps...) {
			strs = append(strs, m.ID, m.Status)
		}
		for _, s := range strs {
			if len([]rune(s)) > maxModelRunes || strings.IndexFunc(s, unicode.IsControl) >= 0 {
				t.Fatalf("kept %q", s)
			}
		}
	})
}
