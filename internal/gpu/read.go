package gpu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// SMI is the --gpu value that runs local nvidia-smi.
const SMI = "nvidia-smi"

// DefaultPort is where dcgm-exporter serves by default: a target's host
// is asked on it when no --gpu is given.
const DefaultPort = "9400"

// Options tune one reading.
type Options struct {
	// Scrape is how a dcgm-exporter URL or a saved file is read (the
	// engine's scrape options: headers, caps, timeout).
	Scrape scrape.Options
	// SMI is how nvidia-smi is run.
	SMI SMIOptions
}

// Read reads the GPUs from source: SMI runs nvidia-smi; anything else is a
// scrape target (a dcgm-exporter's URL or host:port, a saved file).
func Read(ctx context.Context, source string, o Options) (*snapshot.GPUs, error) {
	if source == SMI {
		if o.SMI.Timeout == 0 {
			o.SMI.Timeout = o.Scrape.Timeout
		}
		return RunSMI(ctx, o.SMI)
	}
	res, err := scrape.Fetch(ctx, source, o.Scrape)
	if err != nil {
		return nil, err
	}
	return Parse(ctx, res)
}

// Parse reads a scrape result as a GPU reading: an exporter's exposition,
// or nvidia-smi's CSV with its header line (as --save keeps one).
func Parse(ctx context.Context, res *scrape.Result) (*snapshot.GPUs, error) {
	if csvWithHeader(res.Body) {
		g, err := ParseSMI(nil, res.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.Source, err)
		}
		g.Source, g.At, g.Raw = res.Source, res.ScrapedAt, res.Body
		return g, nil
	}
	f, err := exposition.DetectFormat(res.ContentType, res.Body)
	if err != nil {
		return nil, err
	}
	fams, err := exposition.ParseContext(ctx, res.Body, f)
	if err != nil {
		return nil, err
	}
	g, err := FromFamilies(fams)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", res.Source, err)
	}
	g.Source, g.At, g.Status, g.Raw = res.Source, res.ScrapedAt, snapshot.GPUsRead, res.Body
	return g, nil
}

// csvWithHeader reports a body whose first line is nvidia-smi's CSV
// header.
func csvWithHeader(body []byte) bool {
	line, _, _ := strings.Cut(string(body), "\n")
	cells := strings.Split(line, ",")
	return len(cells) > 1 && isHeader(cells)
}

// Beside is the dcgm-exporter address beside an engine's URL: the same
// host on DefaultPort; "" for a target that is not a URL (a file), or one
// on that port already.
func Beside(engine *url.URL) string {
	if engine == nil {
		return ""
	}
	host := engine.Hostname()
	if host == "" || engine.Port() == DefaultPort {
		return ""
	}
	return (&url.URL{Scheme: engine.Scheme, Host: net.JoinHostPort(host, DefaultPort), Path: "/metrics"}).String()
}

// BesideTimeout bounds the look for an exporter beside the target: one
// that is not there must cost the report almost nothing.
const BesideTimeout = 300 * time.Millisecond

// Failed is the reading of a source that could not be read: said, never
// left out.
func Failed(source string, err error, at time.Time) *snapshot.GPUs {
	return &snapshot.GPUs{Source: source, Status: snapshot.GPUsFailed, Why: Why(err), At: at}
}

// Why says in a line why a source could not be read, with what to do.
func Why(err error) string {
	var se *SMIError
	if errors.As(err, &se) {
		return se.Msg + "; " + se.Hint
	}
	var sc *scrape.Error
	if errors.As(err, &sc) {
		msg := sc.Error()
		if len(sc.Hints) > 0 {
			msg += "; " + sc.Hints[0]
		}
		return msg
	}
	if errors.Is(err, ErrNotGPU) {
		return err.Error() + "; give --gpu a dcgm-exporter's /metrics (port 9400) or nvidia-smi"
	}
	return strings.TrimSpace(err.Error())
}
