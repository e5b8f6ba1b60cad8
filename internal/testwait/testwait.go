// Package testwait is for test packages whose tests mostly wait (on a
// demo's scrapes, a store's, a browser, a shell): run more of their
// parallel tests at once than the machine has cores, which is what
// go test's -parallel defaults to, so their waits overlap.
package testwait

import (
	"flag"
	"runtime"
	"strconv"
)

// Parallel sets -test.parallel to at least n unless the command line set
// it. Call it from TestMain, after flag.Parse.
func Parallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		f.Value.Set(strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
