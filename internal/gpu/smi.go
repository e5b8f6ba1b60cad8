package gpu

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// SMIFields are the nvidia-smi --query-gpu fields asked for, in order.
var SMIFields = []string{
	"index", "uuid", "name", "utilization.gpu", "utilization.memory",
	"memory.used", "memory.free", "memory.total", "power.draw", "power.limit",
	"clocks.sm", "clocks.max.sm", "temperature.gpu", "clocks_throttle_reasons.active",
}

// smiField is how one nvidia-smi field is read.
type smiField struct {
	name  string
	scale float64
	share bool
	hex   bool
}

// smiFields maps nvidia-smi's field names, and the other names it takes
// for them, onto GPU names. Index, uuid and name say which device.
var smiFields = map[string]smiField{
	"utilization.gpu":                     {name: snapshot.GPUUtilization, scale: 0.01, share: true},
	"utilization.memory":                  {name: snapshot.GPUMemoryBusy, scale: 0.01, share: true},
	"memory.used":                         {name: snapshot.GPUMemoryUsedBytes, scale: mib},
	"memory.free":                         {name: snapshot.GPUMemoryFreeBytes, scale: mib},
	"memory.total":                        {name: snapshot.GPUMemoryTotalBytes, scale: mib},
	"power.draw":                          {name: snapshot.GPUPowerWatts, scale: 1},
	"power.draw.instant":                  {name: snapshot.GPUPowerWatts, scale: 1},
	"power.limit":                         {name: snapshot.GPUPowerLimitWatts, scale: 1},
	"enforced.power.limit":                {name: snapshot.GPUPowerLimitWatts, scale: 1},
	"clocks.sm":                           {name: snapshot.GPUSMClockHertz, scale: 1e6},
	"clocks.current.sm":                   {name: snapshot.GPUSMClockHertz, scale: 1e6},
	"clocks.max.sm":                       {name: snapshot.GPUSMClockMaxHertz, scale: 1e6},
	"clocks.max.streaming_multiprocessor": {name: snapshot.GPUSMClockMaxHertz, scale: 1e6},
	"temperature.gpu":                     {name: snapshot.GPUTemperatureCelsius, scale: 1},
	"clocks_throttle_reasons.active":      {name: snapshot.GPUThrottleReasons, scale: 1, hex: true},
	"clocks_event_reasons.active":         {name: snapshot.GPUThrottleReasons, scale: 1, hex: true},
}

// smiIdentity are the fields that say which device a row is.
var smiIdentity = map[string]string{
	"index": "id", "uuid": "uuid", "gpu_uuid": "uuid", "name": "model", "gpu_name": "model",
}

// smiMissing are the figures nvidia-smi has no field for.
var smiMissing = []string{
	"SM, DRAM and tensor activity: nvidia-smi has no field for them (DCGM's profiling module has: run dcgm-exporter and give --gpu its URL)",
	"PCIe and NVLink traffic, XID errors, energy: nvidia-smi --query-gpu has no field for them (dcgm-exporter has)",
}

// SMIError is nvidia-smi failing: not found, slow, exiting non-zero, or
// printing what is no CSV of the fields asked for.
type SMIError struct {
	// Kind is "missing", "timeout", "failed" or "garbage".
	Kind string
	// Msg says what happened, Hint what to do.
	Msg, Hint string
	Err       error
}

func (e *SMIError) Error() string { return e.Msg }
func (e *SMIError) Unwrap() error { return e.Err }

// SMIOptions tune one nvidia-smi run.
type SMIOptions struct {
	// Path is the program to run ("nvidia-smi", looked up on PATH, when
	// empty).
	Path string
	// Timeout bounds one run (the caller's context bounds it too).
	Timeout time.Duration
	// Now reads the clock (time.Now when nil).
	Now func() time.Time
}

// maxSMIOutput bounds what a run may print: one line a GPU.
const maxSMIOutput = 1 << 20

// RunSMI runs nvidia-smi --query-gpu and reads what it prints. A field the
// installed nvidia-smi does not know ("Field … is not a valid field to
// query") is dropped and the query run again, at most once per field.
func RunSMI(ctx context.Context, o SMIOptions) (*snapshot.GPUs, error) {
	path := o.Path
	if path == "" {
		path = "nvidia-smi"
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if _, err := exec.LookPath(path); err != nil {
		return nil, &SMIError{Kind: "missing", Msg: path + " is not on PATH: no NVIDIA driver here to ask",
			Hint: "on a machine with an NVIDIA GPU, install its driver (nvidia-smi comes with it), or give --gpu a dcgm-exporter's URL", Err: err}
	}
	fields := append([]string(nil), SMIFields...)
	for range SMIFields {
		out, err := runOnce(ctx, path, fields, o.Timeout)
		if bad := invalidField(out, err); bad != "" && len(fields) > 1 {
			fields = without(fields, bad)
			continue
		}
		if err != nil {
			return nil, err
		}
		g, perr := ParseSMI(fields, out)
		if perr != nil {
			return nil, &SMIError{Kind: "garbage", Msg: path + " printed what is not a CSV of the fields asked for: " + perr.Error(),
				Hint: "run it yourself: " + path + " --query-gpu=" + strings.Join(fields, ",") + " --format=csv,noheader,nounits", Err: perr}
		}
		g.Source, g.At = path, now()
		g.Raw = append([]byte(strings.Join(fields, ", ")+"\n"), out...)
		return g, nil
	}
	return nil, &SMIError{Kind: "failed", Msg: path + " knows none of the fields asked for", Hint: "update the NVIDIA driver"}
}

func runOnce(ctx context.Context, path string, fields []string, timeout time.Duration) ([]byte, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, path, "--query-gpu="+strings.Join(fields, ","), "--format=csv,noheader,nounits")
	var out, errb capped
	out.max, errb.max = maxSMIOutput, 4096
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second // a child holding the pipes open ends too
	err := cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, &SMIError{Kind: "timeout", Msg: fmt.Sprintf("%s did not answer within %s", path, timeout),
			Hint: "a busy or hung driver makes nvidia-smi slow: check `nvidia-smi` by hand, or raise --timeout", Err: ctx.Err()}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case out.over:
		return nil, &SMIError{Kind: "garbage", Msg: fmt.Sprintf("%s printed more than %d bytes", path, maxSMIOutput), Hint: "run it yourself and look at what it prints"}
	case err != nil:
		said := strings.TrimSpace(firstLine(errb.String() + "\n" + out.String()))
		return out.Bytes(), &SMIError{Kind: "failed", Msg: fmt.Sprintf("%s failed (%v): %s", path, err, said),
			Hint: "nvidia-smi fails where the driver is not loaded or the GPU is lost: run `nvidia-smi` by hand", Err: err}
	}
	return out.Bytes(), nil
}

var invalidFieldRE = regexp.MustCompile(`Field "([^"]+)" is not a valid field to query`)

// invalidField is the field nvidia-smi refused, "" for none.
func invalidField(out []byte, err error) string {
	var e *SMIError
	if !errors.As(err, &e) {
		return ""
	}
	if m := invalidFieldRE.FindStringSubmatch(e.Msg + string(out)); m != nil {
		return m[1]
	}
	return ""
}

func without(fields []string, bad string) []string {
	var out []string
	for _, f := range fields {
		if f != bad {
			out = append(out, f)
		}
	}
	return out
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return "(it printed nothing)"
}

// capped is a buffer that keeps at most max bytes and says it was over.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// ParseSMI reads nvidia-smi's --query-gpu CSV of fields: a row per GPU,
// with or without a header line (whose names, units in brackets aside,
// then say the columns) and with or without units after the values
// ("2856 MiB", "36 %"). "[N/A]", "N/A", "[Not Supported]" and the like
// are absent.
func ParseSMI(fields []string, body []byte) (*snapshot.GPUs, error) {
	r := csv.NewReader(bytes.NewReader(body))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	g := &snapshot.GPUs{Kind: snapshot.GPUFromSMI, Status: snapshot.GPUsRead}
	cols := fields
	first := true
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineOf(err), err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if first && isHeader(rec) {
			first = false
			cols = make([]string, len(rec))
			for i, h := range rec {
				cols[i] = headerName(h)
			}
			continue
		}
		first = false
		if len(rec) != len(cols) {
			return nil, fmt.Errorf("a row has %d values for %d fields: %q", len(rec), len(cols), clip(strings.Join(rec, ", ")))
		}
		d, err := smiRow(cols, rec, g, len(g.Devices))
		if err != nil {
			return nil, err
		}
		g.Devices = append(g.Devices, d)
	}
	if len(g.Devices) == 0 {
		return nil, errors.New("no GPU rows")
	}
	g.Missing = append(g.Missing, smiMissing...)
	return g, nil
}

func lineOf(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// isHeader reports a header line: its first cell is a field name.
func isHeader(rec []string) bool {
	n := headerName(rec[0])
	_, known := smiFields[n]
	_, id := smiIdentity[n]
	return known || id
}

// headerName is a header cell's field name: "memory.used [MiB]" is
// memory.used.
func headerName(h string) string {
	if i := strings.IndexByte(h, '['); i >= 0 {
		h = h[:i]
	}
	return strings.TrimSpace(h)
}

// smiRow reads one GPU's row; a value that is no number where one is
// expected is an error (the output is not what was asked for).
func smiRow(cols, rec []string, g *snapshot.GPUs, row int) (snapshot.GPU, error) {
	d := snapshot.GPU{Scalars: map[string]float64{}}
	for i, col := range cols {
		v := strings.TrimSpace(rec[i])
		if id, ok := smiIdentity[col]; ok {
			switch id {
			case "id":
				d.ID = v
			case "uuid":
				d.UUID = v
			case "model":
				d.Model = v
			}
			continue
		}
		f, ok := smiFields[col]
		if !ok || notAvailable(v) {
			continue
		}
		if _, done := d.Scalars[f.name]; done {
			continue
		}
		x, err := smiNumber(v, f.hex)
		if err != nil {
			return d, fmt.Errorf("%s is %q, not a number", col, clip(v))
		}
		x *= f.scale
		if why := implausible(x, field{share: f.share}); why != "" {
			g.Invalid = append(g.Invalid, snapshot.Problem{Series: "nvidia-smi " + col + " of GPU " + d.ID, Reason: why})
			continue
		}
		if f.share {
			x = min(x, 1)
		}
		d.Scalars[f.name] = x
	}
	if d.ID == "" {
		d.ID = strconv.Itoa(row) // no index asked for: nvidia-smi lists by index
	}
	return d, nil
}

// notAvailable reports nvidia-smi's words for no value.
func notAvailable(v string) bool {
	v = strings.Trim(v, "[] ")
	switch strings.ToLower(v) {
	case "", "n/a", "not supported", "unknown error", "insufficient permissions", "gpu requires reset", "not available":
		return true
	}
	return false
}

// smiNumber reads a value with its unit, if any, after it ("2856 MiB"), or
// a hex bitmask ("0x0000000000000004").
func smiNumber(v string, hex bool) (float64, error) {
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	if hex || strings.HasPrefix(v, "0x") {
		u, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
		return float64(u), err
	}
	return strconv.ParseFloat(v, 64)
}
