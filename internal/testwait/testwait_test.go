package testwait

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

func TestParallel(t *testing.T) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		t.Skip("-parallel given on the command line, which Parallel keeps")
	}
	f := flag.Lookup("test.parallel")
	was := f.Value.String()
	defer f.Value.Set(was)
	Parallel(7)
	if got, want := f.Value.String(), strconv.Itoa(max(7, runtime.GOMAXPROCS(0))); got != want {
		t.Errorf("-test.parallel = %s after Parallel(7), want %s", got, want)
	}
}
