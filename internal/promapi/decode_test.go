package promapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
)

// reference decodes an answer as client_golang does, with encoding/json
// and prometheus/common's own UnmarshalJSON: what decodeAnswer must agree
// with.
func reference(b []byte) (model.Value, string, error) {
	var env struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, "", err
	}
	if env.Status != "success" || env.Data.Result == nil {
		return nil, env.Status, nil
	}
	var v model.Value
	var err error
	switch env.Data.ResultType {
	case "vector":
		var x model.Vector
		err = json.Unmarshal(env.Data.Result, &x)
		v = x
	case "matrix":
		var x model.Matrix
		err = json.Unmarshal(env.Data.Result, &x)
		v = x
	case "scalar":
		var x model.Scalar
		err = json.Unmarshal(env.Data.Result, &x)
		v = &x
	case "string":
		var x model.String
		err = json.Unmarshal(env.Data.Result, &x)
		v = &x
	default:
		return nil, env.Status, fmt.Errorf("type %q", env.Data.ResultType)
	}
	return v, env.Status, err
}

// same compares two decoded values, NaN equal to NaN.
func same(a, b model.Value) bool {
	return fmt.Sprint(a) == fmt.Sprint(b) || canon(a) == canon(b)
}

func canon(v model.Value) string {
	s := fmt.Sprintf("%#v", v)
	return strings.ReplaceAll(s, "NaN", "nan")
}

var answers = []string{
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"vllm:num_requests_running","engine":"0","model_name":"m"},"value":[1700000000.123,"3"]},{"metric":{},"value":[1700000000,"NaN"]},{"metric":{"a":"+Inf"},"value":[1700000000,"-Inf"]}]}}`,
	`{"status":"success","data":{"result":[{"metric":{"x":"q\"u\\o\u00e9\ud83d\ude00\n"},"value":[1,"1e300"]}],"resultType":"vector"},"warnings":["partial response"]}`,
	`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"j"},"values":[[1,"1"],[2.5,"0"]]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"h"},"histogram":[1700000000,{"count":"10","sum":"7.5","buckets":[[0,"0","0.25","2"],[0,"0.25","1","5"],[3,"1","4","3"]]}]}]}}`,
	`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"h"},"histograms":[[1,{"count":"1","sum":"1","buckets":[[1,"-1","1","1"]]}]]}]}}`,
	`{"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}}`,
	`{"status":"success","data":{"resultType":"string","result":[1700000000,"hello"]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[]},"infos":["x"],"extra":{"nested":[true,false,null,-1.5e-3]}}`,
	` { "status" : "success" , "data" : { "resultType" : "vector" , "result" : [ ] } } `,
}

func TestDecodeAnswer(t *testing.T) {
	for _, body := range answers {
		a, err := decodeAnswer([]byte(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		ref, status, err := reference([]byte(body))
		if err != nil {
			t.Fatalf("reference: %s: %v", body, err)
		}
		if a.status != status || !same(a.value, ref) {
			t.Errorf("%s:\n got %v\nwant %v", body, a.value, ref)
		}
	}
	a, _ := decodeAnswer([]byte(answers[1]))
	if len(a.warnings) != 1 || a.warnings[0] != "partial response" {
		t.Errorf("warnings %v", a.warnings)
	}
	v := a.value.(model.Vector)
	if got := string(v[0].Metric["x"]); got != "q\"u\\oé😀\n" {
		t.Errorf("escapes: %q", got)
	}
}

// seriesOf decodes a /series answer into kept label sets.
func seriesOf(b []byte, max int) (*answer, []model.LabelSet, error) {
	var sets []model.LabelSet
	a, err := decodeSeries(b, max, func(m model.Metric) error {
		sets = append(sets, model.LabelSet(m.Clone()))
		return nil
	})
	return a, sets, err
}

func TestDecodeSeries(t *testing.T) {
	a, sets, err := seriesOf([]byte(`{"status":"success","data":[{"__name__":"up","job":"j\u00e9"},{}],"warnings":["w"]}`), 0)
	if err != nil || a.status != "success" || len(sets) != 2 || sets[0]["job"] != "jé" || len(sets[1]) != 0 || len(a.warnings) != 1 {
		t.Errorf("%+v %v %v", a, sets, err)
	}
	if _, sets, err := seriesOf([]byte(`{"status":"success","data":null}`), 0); err != nil || len(sets) != 0 {
		t.Errorf("null data: %v %v", sets, err)
	}
	if _, _, err := seriesOf([]byte(`{"status":"success","data":[1]}`), 0); err == nil {
		t.Error("a number for a label set: no error")
	}
}

// Past its bound, a /series answer stops being read: the series before
// it were handed over, none after.
func TestDecodeSeriesBound(t *testing.T) {
	body := []byte(`{"status":"success","data":[{"a":"1"},{"a":"2"},{"a":"3"}]}`)
	for _, tc := range []struct {
		max, want int
		err       error
	}{{0, 3, nil}, {3, 3, nil}, {2, 2, errTooManySeries}, {1, 1, errTooManySeries}} {
		_, sets, err := seriesOf(body, tc.max)
		if len(sets) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("max %d: %d series, %v; want %d, %v", tc.max, len(sets), err, tc.want, tc.err)
		}
	}
}

// Nesting is bounded as encoding/json bounds it: 10,000 levels are read,
// 10,001 are refused, and 3,000,000 (which overflowed the stack) are
// refused as quickly, by both readers, wherever they are.
func TestDecodeDepth(t *testing.T) {
	nest := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	answer := func(depth int) []byte {
		// The result before its type is skipped, then read again.
		return []byte(`{"status":"success","data":{"result":[],"resultType":"vector"},"infos":` + nest(depth) + `}`)
	}
	series := func(depth int) []byte { return []byte(`{"status":"success","data":[],"infos":` + nest(depth) + `}`) }
	seriesErr := func(b []byte) error {
		_, err := decodeSeries(b, 0, func(model.Metric) error { return nil })
		return err
	}
	answerErr := func(b []byte) error {
		_, err := decodeAnswer(b)
		return err
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		decode func([]byte) error
		ok     bool
	}{
		// The envelope is the first level.
		{"answer at the bound", answer(maxDepth - 1), answerErr, true},
		{"answer past it", answer(maxDepth), answerErr, false},
		{"series at the bound", series(maxDepth - 1), seriesErr, true},
		{"series past it", series(maxDepth), seriesErr, false},
		{"a result of 3M levels before its type", []byte(`{"status":"success","data":{"result":` + strings.Repeat("[", 3_000_000)), answerErr, false},
		{"3M levels in a query's answer", hostiletest.Nested(3_000_000), answerErr, false},
		{"3M levels in a series answer", hostiletest.Nested(3_000_000), seriesErr, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if json.Valid(tc.body) != tc.ok {
				t.Fatalf("encoding/json disagrees")
			}
			err := tc.decode(tc.body)
			switch {
			case tc.ok && err != nil:
				t.Error(err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "nested deeper than 10000")):
				t.Errorf("err = %v, want the depth named", err)
			}
		})
	}
}

func TestDecodeError(t *testing.T) {
	a, err := decodeAnswer([]byte(`{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`))
	if err != nil || a.status != "error" || a.errorType != "execution" || !strings.Contains(a.err, "too many samples") {
		t.Errorf("%+v %v", a, err)
	}
	for _, bad := range []string{
		``, `{`, `<html>`, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`,
		`{"status":"success","data":{"resultType":"nope","result":[]}}`,
		`{"status":"success"} trailing`,
		"{\"status\":\"a\x01\"}",
		`{"status":"\ud800x"}x`,
	} {
		if _, err := decodeAnswer([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The decoder agrees with encoding/json: what it accepts is valid JSON,
// and where both read a result they read the same one.
func FuzzDecode(f *testing.F) {
	for _, a := range answers {
		f.Add([]byte(a))
	}
	f.Add([]byte(`{"status":"success","data":[{"__name__":"up","job":"j"},{}]}`))
	// Nesting at encoding/json's bound, and one past it.
	for _, depth := range []int{maxDepth - 1, maxDepth} {
		f.Add([]byte(`{"status":"success","data":{"result":[],"resultType":"vector"},"infos":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`))
	}
	f.Add(hostiletest.Nested(maxDepth + 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, err := seriesOf(b, 0); err == nil && !json.Valid(b) {
			t.Fatalf("series: accepted invalid JSON %q", b)
		}
		a, err := decodeAnswer(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		ref, status, rerr := reference(b)
		if rerr != nil || status != a.status || foldedKeys(b) {
			// encoding/json reads some odd answers another way: a number
			// where a string was due, a key in another case ("Metric"),
			// which Prometheus never sends and this decoder does not read.
			return
		}
		if a.value != nil && ref != nil && !same(a.value, ref) {
			t.Errorf("%q:\n got %v\nwant %v", b, a.value, ref)
		}
	})
}

var fields = []string{"status", "data", "resultType", "result", "metric", "value", "values", "histogram", "histograms", "count", "sum", "buckets", "warnings", "errorType", "error"}

// foldedKeys reports an object key that is a field's name in another case.
func foldedKeys(b []byte) bool {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				for _, f := range fields {
					if k != f && strings.EqualFold(k, f) {
						return true
					}
				}
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// BenchmarkDecode reads the answer of a state query of a 200-instance
// fleet: 68,000 series.
func BenchmarkDecode(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range 68000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"metric":{"__name__":"vllm:request_queue_time_seconds_bucket","engine":"0","instance":"10.0.%d.%d:8000","job":"vllm","le":"%g","model_name":"meta-llama/Llama-3.1-8B-Instruct","namespace":"llm","pod":"vllm-%03d"},"value":[1793582100,"%d"]}`,
			i/340/250, i/340%250, math.Pow(2, float64(i%20)), i/340, i)
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, err := decodeAnswer(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeReference is the same answer through client_golang's
// path, for comparison.
func BenchmarkDecodeReference(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range 68000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"metric":{"__name__":"vllm:request_queue_time_seconds_bucket","engine":"0","instance":"10.0.%d.%d:8000","job":"vllm","le":"%g","model_name":"meta-llama/Llama-3.1-8B-Instruct","namespace":"llm","pod":"vllm-%03d"},"value":[1793582100,"%d"]}`,
			i/340/250, i/340%250, math.Pow(2, float64(i%20)), i/340, i)
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, _, err := reference(body); err != nil {
			b.Fatal(err)
		}
	}
}

// An answer's buffer is handed back for the next answer once decoded
// (recycle): nothing decoded may still read it. Here the buffer is
// overwritten after decoding, as the next answer would, and every label,
// value, warning and error decoded must be as it was.
func TestDecodedOutlivesItsBuffer(t *testing.T) {
	answers := []string{
		`{"status":"success","warnings":["w1"],"data":{"resultType":"vector","result":[{"metric":{"__name__":"a","le":"0.5","job":"j\u00e9"},"value":[1762042320.5,"3.25"]}]}}`,
		`{"data":{"result":[{"metric":{"x":"y"},"values":[[1,"1"],[2,"2"]]}],"resultType":"matrix"},"status":"success"}`,
		`{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`,
	}
	for _, text := range answers {
		buf := []byte(text)
		a, err := decodeAnswer(buf)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		before := fmt.Sprintf("%v %v %q %q %q", a.value, a.warnings, a.status, a.errorType, a.err)
		for i := range buf {
			buf[i] = '#'
		}
		if after := fmt.Sprintf("%v %v %q %q %q", a.value, a.warnings, a.status, a.errorType, a.err); after != before {
			t.Errorf("after its buffer was overwritten the answer reads\n%s\nwas\n%s", after, before)
		}
	}
	buf := []byte(`{"status":"success","data":[{"__name__":"up","job":"a"},{"__name__":"up","job":"b"}]}`)
	var kept []model.Metric
	if _, err := decodeSeries(buf, 0, func(m model.Metric) error { kept = append(kept, m.Clone()); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = '#'
	}
	if fmt.Sprint(kept) != `[up{job="a"} up{job="b"}]` {
		t.Errorf("series after their buffer was overwritten: %v", kept)
	}
}
