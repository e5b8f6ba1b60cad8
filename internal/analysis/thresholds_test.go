package analysis

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// A band that colours its row warn or bad has a note of that severity;
// good is never an action's colour.
func TestJudgementsConsistent(t *testing.T) {
	for b, j := range judgements {
		switch j.colour {
		case report.Warn, report.Bad:
			if j.note == "" {
				t.Errorf("band %d colours %v rows %s with no note", b, j.rows, j.colour)
			}
		case report.Good:
			if j.note != "" {
				t.Errorf("band %d colours %v good and makes note %s", b, j.rows, j.note)
			}
		case report.None:
		default:
			t.Errorf("band %d: colour %q", b, j.colour)
		}
		if j.note == "" && len(j.rows) == 0 {
			t.Errorf("band %d judges nothing", b)
		}
	}
}

// markdownTable returns the rows of the first table after the heading.
func markdownTable(t *testing.T, path, heading string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	in, seen := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == heading
		case in && strings.HasPrefix(line, "|"):
			seen = true
			if strings.HasPrefix(line, "|---") {
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		case in && seen:
			return rows[1:] // without the header
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table under %q", path, heading)
	}
	return rows[1:]
}

var code = regexp.MustCompile("`([^`]+)`")

// docs/notes.md lists every band of the thresholds table with its colour,
// note and severity and the numbers that draw it, and every note with its
// severity; nothing else.
func TestThresholdsDocumented(t *testing.T) {
	key := func(rows []string, colour report.Severity, note string) string {
		if len(rows) == 0 {
			return "note " + note
		}
		return strings.Join(rows, ",") + " " + string(colour) + " " + note
	}
	bandOf := map[string]int{}
	for b, j := range judgements {
		k := key(j.rows, j.colour, j.note)
		if _, dup := bandOf[k]; dup {
			t.Fatalf("two bands are %s", k)
		}
		bandOf[k] = b
	}
	documented := map[int]bool{}
	for _, cells := range markdownTable(t, "../../docs/notes.md", "Thresholds") {
		if len(cells) != 5 {
			t.Fatalf("docs/notes.md thresholds row %q: want 5 cells", cells)
		}
		figure, limits, colour, note, sev := cells[0], cells[1], cells[2], strings.Trim(cells[3], "`"), cells[4]
		var rows []string
		for _, m := range code.FindAllStringSubmatch(figure, -1) {
			if strings.Contains(m[1], "/") {
				rows = append(rows, m[1])
			}
		}
		if colour == "none" {
			colour = ""
		}
		if note == "—" {
			note = ""
		}
		b, ok := bandOf[key(rows, report.Severity(colour), note)]
		if !ok {
			t.Errorf("docs/notes.md: no band for %q", cells)
			continue
		}
		documented[b] = true
		j := judgements[b]
		if want := "—"; j.note != "" && sev != string(j.severity()) || j.note == "" && sev != want {
			t.Errorf("docs/notes.md: %q: severity %s, the code says %s", cells, sev, j.severity())
		}
		for _, l := range j.limits {
			if s := strconv.FormatFloat(l, 'g', -1, 64); !strings.Contains(limits, s) {
				t.Errorf("docs/notes.md: %q does not state the threshold %s", cells, s)
			}
		}
	}
	for b, j := range judgements {
		if !documented[b] {
			t.Errorf("band %d (%v %s %s) is not in docs/notes.md's thresholds table", b, j.rows, j.colour, j.note)
		}
	}

	severities := map[string]report.Severity{}
	for _, j := range judgements {
		if j.note != "" {
			severities[j.note] = j.severity()
		}
	}
	listed := map[string]bool{}
	for _, cells := range markdownTable(t, "../../docs/notes.md", "Notes") {
		id := strings.Trim(cells[0], "`")
		listed[id] = true
		if sev, ok := severities[id]; !ok {
			t.Errorf("docs/notes.md lists note %s, which no band makes", id)
		} else if cells[1] != string(sev) {
			t.Errorf("docs/notes.md: note %s is %s, the code says %s", id, cells[1], sev)
		}
	}
	for id := range severities {
		if !listed[id] {
			t.Errorf("note %s is not in docs/notes.md's notes table", id)
		}
	}
}

// fixtures lists every exposition in the repository's testdata trees.
func fixtures(t *testing.T) []string {
	var files []string
	for _, dir := range []string{"../../testdata/tabbyapi", "../../testdata/dialects", "../../testdata/real"} {
		err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, ".prom") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 40 {
		t.Fatalf("found %d fixtures: the testdata moved", len(files))
	}
	return files
}

// In every report of every fixture a row coloured warn or bad has a note
// of that severity made for it, and every note comes from a band: the
// colours and --fail-on say the same thing.
func TestColoursHaveNotes(t *testing.T) {
	rowsOf := map[string][]string{}
	for _, j := range judgements {
		if j.note != "" {
			rowsOf[j.note] = append(rowsOf[j.note], j.rows...)
		}
	}
	coloured := 0
	for _, f := range fixtures(t) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		format, err := exposition.DetectFormat("", body)
		if err != nil {
			t.Fatal(err)
		}
		fams, err := exposition.Parse(body, format)
		if err != nil {
			t.Fatal(err)
		}
		s, err := dialect.Map(fams, dialect.Options{})
		if err != nil {
			continue
		}
		s.ScrapedAt = scrapedAt
		r := Analyze(s, Options{Hist: true})
		for _, n := range r.Notes {
			if _, ok := rowsOf[n.ID]; !ok {
				t.Errorf("%s: note %s comes from no band", f, n.ID)
			}
		}
		for _, sec := range r.Sections {
			for _, row := range sec.Rows {
				if row.Severity != report.Warn && row.Severity != report.Bad {
					continue
				}
				coloured++
				path := sec.ID + "/" + row.ID
				if !slices.ContainsFunc(r.Notes, func(n report.Note) bool {
					return n.Severity == row.Severity && slices.Contains(rowsOf[n.ID], path)
				}) {
					t.Errorf("%s: row %s is %s with no %s note for it (notes %v)", f, path, row.Severity, row.Severity, noteIDs(r))
				}
			}
		}
	}
	if coloured < 10 {
		t.Errorf("only %d warn or bad rows over every fixture: the test checks little", coloured)
	}
}

// judged builds a snapshot with the given scalars and one served request.
func judged(scalars map[string]float64) *report.Report {
	s := &snapshot.Snapshot{Dialect: "x", Scalars: map[string]float64{snapshot.RequestsTotal: 1},
		Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{}}
	for k, v := range scalars {
		s.Scalars[k] = v
	}
	return Analyze(s, Options{})
}

// Each band at and either side of its thresholds, by hand.
func TestBands(t *testing.T) {
	kv := func(used float64) map[string]float64 {
		return map[string]float64{snapshot.KVCacheTokens: used, snapshot.KVCacheMaxTokens: 1000}
	}
	draft := func(accepted float64) map[string]float64 {
		return map[string]float64{snapshot.SpecDecodeRequestsTotal: 1, snapshot.SpecDecodeNumDraftTokensTotal: 100, snapshot.SpecDecodeNumAcceptedTokensTotal: accepted}
	}
	hits := func(h float64) map[string]float64 {
		return map[string]float64{snapshot.PrefixCacheQueries: 1000, snapshot.PrefixCacheHits: h}
	}
	offload := func(held, bytes float64) map[string]float64 {
		return map[string]float64{snapshot.KVOffloadTokens: held, snapshot.KVOffloadMaxTokens: 256, snapshot.KVOffloadBytes: bytes, snapshot.KVOffloadMaxBytes: 4096}
	}
	tests := []struct {
		name    string
		scalars map[string]float64
		row     string // section/row
		colour  report.Severity
		notes   []string // every note with its severity, "id:severity"
	}{
		{"kv 899/1000", kv(899), "live/kv_cache", report.Good, nil},
		{"kv 900/1000", kv(900), "live/kv_cache", report.Warn, []string{"kv_cache_pressure:warn"}},
		{"kv 1000/1000", kv(1000), "live/kv_cache", report.Warn, []string{"kv_cache_pressure:warn"}},
		{"kv 1001/1000", kv(1001), "live/kv_cache", report.Warn, []string{"kv_cache_over_capacity:warn"}},
		{"acceptance 0.71", draft(71), "spec_decode/draft_acceptance", report.Good, nil},
		{"acceptance 0.70", draft(70), "spec_decode/draft_acceptance", report.None, nil},
		{"acceptance 0.51", draft(51), "spec_decode/draft_acceptance", report.None, nil},
		{"acceptance 0.50", draft(50), "spec_decode/draft_acceptance", report.Warn, []string{"draft_acceptance_low:warn"}},
		{"hit rate 0.501", hits(501), "prefix_cache/hit_rate", report.Good, nil},
		{"hit rate 0.5", hits(500), "prefix_cache/hit_rate", report.None, nil},
		{"hit rate 0", hits(0), "prefix_cache/hit_rate", report.None, nil},
		{"offload 256/256", offload(256, 4096), "live/kv_offload", report.None, nil},
		{"offload 257/256", offload(257, 4096), "live/kv_offload", report.Warn, []string{"kv_offload_over_capacity:warn"}},
		// Both gauges over: both rows warn, one note.
		{"offload tokens and bytes over", offload(257, 4097), "kv_offload/ram", report.Warn, []string{"kv_offload_over_capacity:warn"}},
		{"offload bytes over", offload(10, 4097), "kv_offload/ram", report.Warn, []string{"kv_offload_over_capacity:warn"}},
	}
	for _, tt := range tests {
		r := judged(tt.scalars)
		section, id, _ := strings.Cut(tt.row, "/")
		if got := row(t, r, section, id).Severity; got != tt.colour {
			t.Errorf("%s: %s is %q, want %q", tt.name, tt.row, got, tt.colour)
		}
		var notes []string
		for _, n := range r.Notes {
			notes = append(notes, n.ID+":"+string(n.Severity))
		}
		if !slices.Equal(notes, tt.notes) {
			t.Errorf("%s: notes %v, want %v", tt.name, notes, tt.notes)
		}
	}
	if got := noteText(judged(draft(45)), "draft_acceptance_low"); !strings.HasPrefix(got, "only 45.0% of drafted tokens were accepted") {
		t.Errorf("acceptance note %q", got)
	}
}
