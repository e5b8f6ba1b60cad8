package cli

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/bench/sweep"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/termsafe"
)

var benchCompareLong = `Compares two reports of inferscope bench -o json (one run, a sweep, or
one load run with --repeat), B against A: a change of settings between
them, say. Each load that both ran is paired (the same concurrency, or
the same rate; the synchronous and throughput steps of the automatic
profile by what they are), and for every figure both have (throughput,
goodput, TTFT, TPOT, E2E and ITL percentiles, the server's waiting, KV
peak, queue and prefill time) it says the change and whether it went
beyond the runs' own spread: every run of B above every run of A, or
below. Where a side ran each load once there is no spread, and no change
is called a move; run both with --repeat 3. Then the notes that appeared
or cleared at each load, the verdict where it changed, and the two knees
of searches under --slo.`

const benchCompareExample = `  inferscope bench gpu-box:8000 --sweep concurrency=1,8,32 --repeat 3 -o json > before.json
  inferscope bench gpu-box:8000 --sweep concurrency=1,8,32 --repeat 3 -o json > after.json
  inferscope bench compare before.json after.json`

// benchCompareOptions are bench compare's flags.
type benchCompareOptions struct {
	outputFlags
}

func newBenchCompareCmd(io *iostreams.IO) *cobra.Command {
	o := &benchCompareOptions{}
	cmd := newCommand(commandSpec{
		use:     "compare A.json B.json [flags]",
		short:   "compare two saved bench reports: what moved beyond the runs' spread",
		long:    benchCompareLong,
		example: benchCompareExample,
		exits:   []exitStatus{{ExitOK, "the comparison written"}},
		args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("give two files that inferscope bench -o json wrote: bench compare before.json after.json", "bench compare takes two reports, got %d", len(args))
			}
			return nil
		},
		run: func(cmd *cobra.Command, args []string) error {
			if err := o.outputFlags.check(given(cmd)); err != nil {
				return err
			}
			return o.run(io, args[0], args[1])
		},
	})
	o.outputFlags.noHist = true // a comparison holds spreads, no distributions
	o.outputFlags.define(cmd)
	return cmd
}

func (o *benchCompareOptions) run(io *iostreams.IO, a, b string) error {
	ra, err := readSaved(a)
	if err != nil {
		return err
	}
	rb, err := readSaved(b)
	if err != nil {
		return err
	}
	c := sweep.Compare(ra, rb, a, b)
	if o.json {
		err = sweep.CompareJSON(io.Out, c)
	} else {
		err = sweep.CompareText(io.Out, c, sweep.TextOptions{Render: o.renderOptions(io, o.layoutWidth(io))})
	}
	if err != nil {
		return writeError(err)
	}
	return nil
}

// readSaved reads a report bench -o json wrote.
func readSaved(name string) (*sweep.Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usagef("give the path of a file that inferscope bench -o json wrote", "cannot read %s: %v", termsafe.ShellQuote(name), termsafe.Text(strings.TrimPrefix(err.Error(), "open "+name+": ")))
	}
	defer f.Close()
	res, err := sweep.Read(f)
	if err != nil {
		hint := "give the JSON that inferscope bench -o json wrote"
		if !errors.Is(err, sweep.ErrNotBench) {
			hint = "use the inferscope that wrote it, or a newer one"
		}
		return nil, usagef(hint, "%s: %v", termsafe.ShellQuote(name), termsafe.Text(err.Error()))
	}
	return res, nil
}
