package page

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The pages in a real browser: Debian's chromium, headless, driven over
// the DevTools protocol by chromedp. Each page is loaded from its file
// with the network out of reach of nothing but the file itself, and then:
// no console message of an error or a warning, no request beyond the file;
// every chart drawn with its title, both axes with ticks and labels, and
// every point of every series; every number drawn, and every number in the
// chart's data table and in the key figures, equal to the JSON written
// from the same report, found by the path the page names; the page read in
// a light scheme, a dark one and in print, its text legible in each. A
// screenshot at 1280×800 of each is kept (the path is logged).
//
// The test skips only where chromium is not installed and INFERSCOPE_CI
// is not set; in CI (.ci/run installs chromium) it fails instead.

// browserFlags are the flags chromium runs with: headless, no sandbox (CI
// runs as root), and nothing it would fetch of its own accord.
func browserFlags(exe, profile string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 800),
	}
}

// chromium finds the browser, or skips (fails in CI) without one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("INFERSCOPE_CI") != "" {
		t.Fatal("chromium is not installed, and INFERSCOPE_CI is set: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium)")
	return ""
}

// artifacts is where the screenshots are kept: $INFERSCOPE_ARTIFACTS, else
// a folder of the system's temporary directory that outlives the test.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("INFERSCOPE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "inferscope-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testPage is one page and the JSON of the same report.
type testPage struct {
	name       string
	html, json []byte
	// charts are the ids of the charts the page must draw (not say
	// "nothing to draw" in place of).
	charts []string
}

func TestPagesInBrowser(t *testing.T) {
	exe := chromium(t)
	pages := buildPages(t)
	dir := t.TempDir()
	keep := artifacts(t)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserFlags(exe, filepath.Join(dir, "profile"))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// The first run starts the one browser every page is read in.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			// The page is kept beside its screenshots, and read from there.
			file := filepath.Join(keep, "bench-"+p.name+".html")
			if err := os.WriteFile(file, p.html, 0o644); err != nil {
				t.Fatal(err)
			}
			checkPage(t, browser, p, (&url.URL{Scheme: "file", Path: file}).String(), keep)
		})
	}
}

// seen is what a tab saw happen while it loaded and was read.
type seen struct {
	mu       sync.Mutex
	console  []string
	requests []string
}

func (s *seen) add(list *[]string, v string) {
	s.mu.Lock()
	*list = append(*list, v)
	s.mu.Unlock()
}

func checkPage(t *testing.T, browser context.Context, p testPage, fileURL, keep string) {
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(tab, 60*time.Second)
	defer cancelTimeout()
	// Subscribe before the page loads, so that nothing is missed.
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	var s seen
	var wg sync.WaitGroup
	listenCtx, stopListening := context.WithCancel(tab)
	console := chromedp.Console(listenCtx)
	requests := chromedp.Events(listenCtx, network.RequestWillBeSent)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m, err := range console {
			if err != nil {
				return
			}
			s.add(&s.console, m.String())
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range requests {
			if err != nil {
				return
			}
			s.add(&s.requests, ev.Request.URL)
		}
	}()

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(fileURL),
		chromedp.WaitReady("body"),
	); err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(p.json, &doc); err != nil {
		t.Fatal(err)
	}
	dom, err := chromedp.Run(ctx, chromedp.Evaluate[domView](readDOM))
	if err != nil {
		t.Fatal(err)
	}
	checkCharts(t, dom, doc, p.charts)
	checkFigures(t, dom, doc)
	if len(dom.Resources) > 0 {
		t.Errorf("the page loaded resources: %v", dom.Resources)
	}

	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	keepShot(t, shot, filepath.Join(keep, "bench-"+p.name+".png"))
	checkSchemes(t, ctx, p, keep)

	// Let the last events arrive, then stop listening.
	time.Sleep(100 * time.Millisecond)
	stopListening()
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.console {
		if strings.HasPrefix(m, "error") || strings.HasPrefix(m, "warning") || strings.HasPrefix(m, "exception") {
			t.Errorf("console: %s", m)
		}
	}
	for _, u := range s.requests {
		if u != fileURL {
			t.Errorf("a request beyond the file: %s", u)
		}
	}
	if len(s.requests) == 0 {
		t.Error("no request seen at all: the network events are not being read")
	}
}

// keepShot writes a screenshot, held to 1280×800, and logs where.
func keepShot(t *testing.T, png []byte, path string) {
	t.Helper()
	cfg, _, err := image.DecodeConfig(bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 1280 || cfg.Height != 800 {
		t.Errorf("the screenshot is %d×%d, want 1280×800", cfg.Width, cfg.Height)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// domView is what readDOM returns.
type domView struct {
	Title     string       `json:"title"`
	Charts    []chartView  `json:"charts"`
	Figures   []figureView `json:"figures"`
	Resources []string     `json:"resources"`
}

type chartView struct {
	ID, Title, XLabel, YLabel string
	Empty, SVG                bool
	Role, LabelledBy          string
	LabelText                 string
	Width                     float64
	XTicks, YTicks            []string
	Crowded                   []string // Y tick labels over the axis's label or cut off
	Series                    []seriesView
	Rows                      []rowView
	Rules                     []ruleView
	Marks                     []markView
}

type seriesView struct {
	Name                         string
	Count                        int
	FromX, FromX2, FromY, Derive string
	Points                       []pointView
}

type pointView struct {
	I               int
	X, X2, Y, FromX string
	W, H            float64
}

type rowView struct {
	Series                       string
	I                            int
	FromX, FromX2, FromY, Derive string
	Cells                        []string
}

type ruleView struct{ From, Value string }

type markView struct{ FromX, FromY, X, Y string }

type figureView struct{ Path, Value, Text string }

// readDOM reads the page as a person's browser laid it out.
const readDOM = `(() => {
  const d = e => Object.assign({}, e.dataset);
  const charts = [...document.querySelectorAll('figure.chart')].map(f => {
    const svg = f.querySelector('svg.plot');
    const c = {ID: f.id, Title: (f.querySelector('h3') || {}).textContent || '', Empty: !!f.querySelector('.empty'), SVG: !!svg,
      XTicks: [], YTicks: [], Series: [], Rows: [], Rules: [], Marks: []};
    if (!svg) return c;
    c.Role = svg.getAttribute('role') || '';
    c.LabelledBy = svg.getAttribute('aria-labelledby') || '';
    c.LabelText = c.LabelledBy.split(' ').map(id => (document.getElementById(id) || {}).textContent || '').join(' | ');
    c.Width = svg.getBoundingClientRect().width;
    c.XLabel = (svg.querySelector('.axis.x .axis-label') || {}).textContent || '';
    c.YLabel = (svg.querySelector('.axis.y .axis-label') || {}).textContent || '';
    c.XTicks = [...svg.querySelectorAll('.axis.x .tick')].map(t => t.textContent);
    c.YTicks = [...svg.querySelectorAll('.axis.y .tick')].map(t => t.textContent);
    // A Y tick's label laid over the axis's upright label, or cut by the
    // picture's left edge, as the browser laid them out.
    const yl = svg.querySelector('.axis.y .axis-label'), box = svg.getBoundingClientRect();
    const ylr = yl ? yl.getBoundingClientRect() : null;
    c.Crowded = [...svg.querySelectorAll('.axis.y .tick text')].filter(t => { const r = t.getBoundingClientRect();
      return r.left < box.left || (ylr && r.left < ylr.right && r.right > ylr.left && r.top < ylr.bottom && r.bottom > ylr.top); }).map(t => t.textContent);
    c.Series = [...svg.querySelectorAll('g.series[data-count]')].map(g => ({Name: g.dataset.series, Count: +g.dataset.count,
      FromX: g.dataset.fromX || '', FromX2: g.dataset.fromX2 || '', FromY: g.dataset.fromY || '', Derive: g.dataset.derive || '',
      Points: [...g.querySelectorAll('[data-i]')].map(p => { const b = p.getBBox();
        return {I: +p.dataset.i, X: p.dataset.x, X2: p.dataset.x2 || '', Y: p.dataset.y, FromX: p.dataset.pointFromX || '', W: b.width, H: b.height}; })}));
    c.Rows = [...f.querySelectorAll('table tr.datum')].map(r => ({Series: r.dataset.series, I: +r.dataset.i,
      FromX: r.dataset.pointFromX || r.dataset.fromX || '', FromX2: r.dataset.fromX2 || '', FromY: r.dataset.fromY || '', Derive: r.dataset.derive || '',
      Cells: [...r.querySelectorAll('td')].map(td => td.dataset.value === undefined ? '-' : td.dataset.value)}));
    c.Rules = [...svg.querySelectorAll('g.rule[data-from]')].map(r => ({From: r.dataset.from, Value: r.dataset.value}));
    c.Marks = [...svg.querySelectorAll('g.mark[data-from-x]')].map(m => ({FromX: m.dataset.fromX, FromY: m.dataset.fromY || '', X: m.dataset.x, Y: m.dataset.y}));
    return c;
  });
  const figures = [...document.querySelectorAll('[data-path]')].map(e => ({Path: e.dataset.path, Value: e.dataset.value, Text: e.textContent}));
  return {title: document.title, charts, figures, resources: performance.getEntriesByType('resource').map(e => e.name)};
})()`

// at reads the JSON value at a dotted path ("samples.3.kv_usage").
func at(doc any, path string) (any, bool) {
	v := doc
	for _, k := range strings.Split(path, ".") {
		switch o := v.(type) {
		case nil:
			return nil, true // within a null object: null
		case map[string]any:
			var ok bool
			if v, ok = o[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(o) {
				return nil, false
			}
			v = o[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// fill puts a point's index into a path.
func fill(path string, i int) string {
	return strings.NewReplacer("{i+1}", strconv.Itoa(i+1), "{i}", strconv.Itoa(i)).Replace(path)
}

// same says whether a value the page holds (its full form, "" for none)
// is the JSON's at path; why where not.
func same(doc any, path, held string) (bool, string) {
	v, ok := at(doc, path)
	if !ok {
		return false, fmt.Sprintf("%s is not in the JSON", path)
	}
	return sameValue(v, path, held)
}

// sameDerived is same for a value made of the JSON's (chart.From's
// Derive): "cumulative-share", the values at path up to index i over all
// of them, worked out here from the JSON.
func sameDerived(doc any, derive, path string, i int, held string) (bool, string) {
	if derive == "" {
		return same(doc, fill(path, i), held)
	}
	if derive != "cumulative-share" {
		return false, "an unknown derivation " + derive
	}
	arr, _ := at(doc, index.ReplaceAllString(path, ""))
	a, ok := arr.([]any)
	if !ok {
		return false, fmt.Sprintf("%s is not an array in the JSON", path)
	}
	var upTo, all float64
	for k, v := range a {
		f, _ := v.(float64)
		all += f
		if k <= i {
			upTo += f
		}
	}
	return sameValue(upTo/all, fmt.Sprintf("the cumulative share of %s at %d", path, i), held)
}

// sameValue says whether held is v, the JSON's value at path.
func sameValue(v any, path, held string) (bool, string) {
	if v == nil {
		return held == "", fmt.Sprintf("%s is null in the JSON, the page holds %q", path, held)
	}
	f, isNum := v.(float64)
	if !isNum {
		return false, fmt.Sprintf("%s is %v in the JSON, not a number", path, v)
	}
	got, err := strconv.ParseFloat(held, 64)
	return err == nil && got == f, fmt.Sprintf("%s is %v in the JSON, the page holds %q", path, f, held)
}

var index = regexp.MustCompile(`\.\{i(\+1)?\}.*$`)

func checkCharts(t *testing.T, dom domView, doc any, want []string) {
	t.Helper()
	byID := map[string]chartView{}
	for _, c := range dom.Charts {
		byID[c.ID] = c
	}
	for _, id := range want {
		c, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("no chart %s", id)
			continue
		case !c.SVG || c.Empty:
			t.Errorf("chart %s draws nothing", id)
			continue
		case len(c.Crowded) > 0:
			t.Errorf("chart %s: Y tick labels %q overlap the axis's label or are cut off", id, c.Crowded)
		}
		if c.Title == "" || c.Role != "img" || !strings.Contains(c.LabelText, c.Title) {
			t.Errorf("chart %s: title %q, role %q, named by %q", id, c.Title, c.Role, c.LabelText)
		}
		if c.Width < 300 {
			t.Errorf("chart %s is laid out %v px wide", id, c.Width)
		}
		if c.XLabel == "" || c.YLabel == "" || len(c.XTicks) < 2 || len(c.YTicks) < 2 {
			t.Errorf("chart %s: axes %q (%d ticks) and %q (%d ticks)", id, c.XLabel, len(c.XTicks), c.YLabel, len(c.YTicks))
		}
		for _, tick := range append(c.XTicks, c.YTicks...) {
			if strings.TrimSpace(tick) == "" {
				t.Errorf("chart %s: a tick without a label", id)
			}
		}
		if len(c.Series) == 0 {
			t.Errorf("chart %s has no series", id)
		}
		drawn := 0
		rows := map[string]int{}
		for _, r := range c.Rows {
			rows[r.Series]++
			froms := []string{r.FromX}
			if r.FromX2 != "" {
				froms = append(froms, r.FromX2)
			}
			cells := r.Cells
			if len(cells) == 3 && r.FromX2 == "" {
				cells = []string{cells[0], cells[2]} // the "to" column of another series
			}
			if len(cells) != len(froms)+1 {
				t.Errorf("chart %s: row %s %d has %d cells for %v and %s", id, r.Series, r.I, len(r.Cells), froms, r.FromY)
				continue
			}
			for k, from := range froms {
				if ok, why := same(doc, fill(from, r.I), cells[k]); !ok {
					t.Errorf("chart %s, table: %s", id, why)
				}
			}
			if ok, why := sameDerived(doc, r.Derive, r.FromY, r.I, cells[len(cells)-1]); !ok {
				t.Errorf("chart %s, table: %s", id, why)
			}
		}
		for _, s := range c.Series {
			if s.FromX == "" || s.FromY == "" {
				t.Errorf("chart %s: series %q names no JSON path", id, s.Name)
				continue
			}
			// As many points as the JSON's arrays have values for (the
			// shorter of X's and Y's: a histogram's edges are one more than
			// its bins, and the last of a sweep's counts is of those above
			// every bound), each in the table, each drawn that is not null.
			n := -1
			for _, from := range []string{s.FromX, s.FromY} {
				if !index.MatchString(from) {
					continue
				}
				arr, _ := at(doc, index.ReplaceAllString(from, ""))
				if a, ok := arr.([]any); ok && (n < 0 || len(a) < n) {
					n = len(a)
				}
			}
			if n != s.Count {
				t.Errorf("chart %s: series %q has %d points, the JSON's arrays %d", id, s.Name, s.Count, n)
			}
			if rows[s.Name] != s.Count {
				t.Errorf("chart %s: series %q has %d rows in its table, %d points", id, s.Name, rows[s.Name], s.Count)
			}
			nulls := 0
			for i := range s.Count {
				if v, _ := at(doc, fill(s.FromY, i)); v == nil && s.Derive == "" {
					nulls++
				}
			}
			if len(s.Points) != s.Count-nulls {
				t.Errorf("chart %s: series %q draws %d points of %d, %d null", id, s.Name, len(s.Points), s.Count, nulls)
			}
			for _, p := range s.Points {
				drawn++
				if p.W <= 0 && p.H <= 0 {
					t.Errorf("chart %s: series %q point %d is not drawn (%v×%v)", id, s.Name, p.I, p.W, p.H)
				}
				fromX := s.FromX
				if p.FromX != "" {
					fromX = p.FromX
				}
				for _, v := range []struct{ from, held string }{{fromX, p.X}, {s.FromX2, p.X2}} {
					if v.from == "" {
						continue
					}
					if ok, why := same(doc, fill(v.from, p.I), v.held); !ok {
						t.Errorf("chart %s, drawn: %s", id, why)
					}
				}
				if ok, why := sameDerived(doc, s.Derive, s.FromY, p.I, p.Y); !ok {
					t.Errorf("chart %s, drawn: %s", id, why)
				}
			}
		}
		if drawn == 0 {
			t.Errorf("chart %s draws no point", id)
		}
		for _, r := range c.Rules {
			if ok, why := same(doc, r.From, r.Value); !ok {
				t.Errorf("chart %s, rule: %s", id, why)
			}
		}
		for _, m := range c.Marks {
			if ok, why := same(doc, m.FromX, m.X); !ok {
				t.Errorf("chart %s, mark: %s", id, why)
			}
			if m.FromY != "" {
				if ok, why := same(doc, m.FromY, m.Y); !ok {
					t.Errorf("chart %s, mark: %s", id, why)
				}
			}
		}
		t.Logf("chart %s: %d series, %d points drawn, %d table rows, %d rules, %d marks", id, len(c.Series), drawn, len(c.Rows), len(c.Rules), len(c.Marks))
	}
}

func checkFigures(t *testing.T, dom domView, doc any) {
	t.Helper()
	if len(dom.Figures) == 0 {
		t.Error("no key figure names its JSON path")
	}
	for _, f := range dom.Figures {
		if ok, why := same(doc, f.Path, f.Value); !ok {
			t.Errorf("figure %q: %s", f.Text, why)
		}
	}
}

// checkSchemes reads the page in the dark scheme and in print: the
// background and the text change with the scheme, the text stays legible
// (a contrast of 7:1 or more), print is on white with the data tables
// left out; a screenshot of the dark page is kept.
func checkSchemes(t *testing.T, ctx context.Context, p testPage, keep string) {
	t.Helper()
	const read = `(() => { const b = getComputedStyle(document.body); const d = document.querySelector('details.data');
	  return [b.backgroundColor, b.color, d ? getComputedStyle(d).display : 'none']; })()`
	schemes := []struct {
		name  string
		media emulation.SetEmulatedMediaParams
	}{
		{"light", emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}}},
		{"dark", emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}},
		{"print", emulation.SetEmulatedMediaParams{Media: "print", Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}},
	}
	got := map[string][]string{}
	for _, s := range schemes {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, s.media); err != nil {
			t.Fatal(err)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](read))
		if err != nil {
			t.Fatal(err)
		}
		got[s.name] = v
		if c := contrast(v[0], v[1]); !(c >= 7) {
			t.Errorf("%s: text %s on %s, a contrast of %.1f", s.name, v[1], v[0], c)
		}
		if s.name == "dark" {
			shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			keepShot(t, shot, filepath.Join(keep, "bench-"+p.name+"-dark.png"))
		}
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	if got["light"][0] == got["dark"][0] || lum(got["dark"][0]) > 0.1 {
		t.Errorf("the dark scheme's background %s, the light one's %s", got["dark"][0], got["light"][0])
	}
	if lum(got["print"][0]) < 0.99 || got["print"][2] != "none" {
		t.Errorf("print: background %s, data tables %s", got["print"][0], got["print"][2])
	}
	if got["light"][2] == "none" {
		t.Error("the data tables are not in the page")
	}
}

var rgb = regexp.MustCompile(`rgba?\((\d+), (\d+), (\d+)`)

// lum is a CSS colour's relative luminance (WCAG 2).
func lum(css string) float64 {
	m := rgb.FindStringSubmatch(css)
	if m == nil {
		return math.NaN()
	}
	var out float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		c, _ := strconv.ParseFloat(m[i+1], 64)
		c /= 255
		if c <= 0.03928 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		out += w * c
	}
	return out
}

// contrast is the WCAG contrast ratio of two CSS colours.
func contrast(a, b string) float64 {
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}
