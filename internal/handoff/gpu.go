package handoff

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DriverFloor is what a node's NVIDIA driver and GPUs must meet for an
// image built with one CUDA version.
type DriverFloor struct {
	CUDA string `json:"cuda"`
	// Min is the lowest driver version that runs the image.
	Min string `json:"min"`
	// ForwardCompat lists the data-center driver branches that run it
	// through CUDA forward compatibility, each as its lowest version
	// ("470.57" admits 470.57 and later 470.x).
	ForwardCompat []string `json:"forward_compat,omitempty"`
	// MinCC and BelowCC bound the GPUs' compute capability ("6.0" ≤ cc <
	// "8.0"); empty means no bound on record.
	MinCC   string `json:"min_cc,omitempty"`
	BelowCC string `json:"below_cc,omitempty"`
	Source  string `json:"source"`
}

// driverFloors holds only published figures (NVIDIA CUDA and NGC release
// notes as collected in the project's MLPerf notes, §4.1). A CUDA version
// not listed here has no floor on record, and the handoff fails closed.
var driverFloors = map[string]DriverFloor{
	"10.0": {CUDA: "10.0", Min: "410.48", MinCC: "6.0", BelowCC: "8.0",
		Source: "CUDA 10.0.130 release notes (driver >= 410.48); CUDA 10 images have no Ampere or Hopper kernels"},
	"10.1": {CUDA: "10.1", Min: "418.39", MinCC: "6.0", BelowCC: "8.0",
		Source: "CUDA 10.1 release notes (driver >= 418.39); CUDA 10 images have no Ampere or Hopper kernels"},
	"11.0": {CUDA: "11.0", Min: "450.51.05", BelowCC: "9.0",
		Source: "CUDA 11.0 GA release notes (driver >= 450.51.05); Hopper needs CUDA 11.8"},
	"11.8": {CUDA: "11.8", Min: "520", ForwardCompat: []string{"450.51", "470.57", "510.47", "515.65"},
		Source: "NGC 22.09 release notes: driver >= 520, or data-center forward compatibility on R450.51+, R470.57+, R510.47+, R515.65+ (R418, R440, R460 are not forward-compatible)"},
}

// FloorFor returns the driver floor on record for an image's CUDA version.
func FloorFor(cuda string) (DriverFloor, bool) {
	f, ok := driverFloors[cuda]
	return f, ok
}

// KnownCUDA lists the CUDA versions with a driver floor on record.
func KnownCUDA() []string { return slices.Sorted(maps.Keys(driverFloors)) }

// DriverOK reports whether driver version v meets f. It is the Go
// statement of the check the preflight script makes on the node; tests
// hold the two to the same answers.
func (f DriverFloor) DriverOK(v string) bool {
	if versionAtLeast(v, f.Min) {
		return true
	}
	for _, fc := range f.ForwardCompat {
		if branch(v) == branch(fc) && versionAtLeast(v, fc) {
			return true
		}
	}
	return false
}

// CCOK reports whether compute capability cc ("9.0") is within f's bounds.
func (f DriverFloor) CCOK(cc string) bool {
	if f.MinCC != "" && !versionAtLeast(cc, f.MinCC) {
		return false
	}
	if f.BelowCC != "" && versionAtLeast(cc, f.BelowCC) {
		return false
	}
	return true
}

func branch(v string) string {
	b, _, _ := strings.Cut(v, ".")
	return b
}

// versionAtLeast compares dotted decimal versions field by field; a
// missing field is 0 and a non-numeric one makes the answer false.
func versionAtLeast(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := 0, 0
		var err error
		if i < len(a) {
			if x, err = strconv.Atoi(a[i]); err != nil || x < 0 {
				return false
			}
		}
		if i < len(b) {
			if y, err = strconv.Atoi(b[i]); err != nil || y < 0 {
				return false
			}
		}
		if x != y {
			return x > y
		}
	}
	return true
}

func (f DriverFloor) describe() string {
	s := fmt.Sprintf("driver >= %s", f.Min)
	if len(f.ForwardCompat) > 0 {
		s += " (or forward-compatible " + strings.Join(f.ForwardCompat, ", ") + ")"
	}
	if f.MinCC != "" || f.BelowCC != "" {
		s += ", compute capability"
		if f.MinCC != "" {
			s += " >= " + f.MinCC
		}
		if f.BelowCC != "" {
			s += " and < " + f.BelowCC
		}
	}
	return s
}
