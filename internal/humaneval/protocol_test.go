package humaneval

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"testing"
)

// byteStream stands in for a supervisor's stdout when the stream itself is
// under test (fuzzing the frame parser): it replays fixed bytes and drops
// what is written to it.
type byteStream struct{ r io.Reader }

func (b *byteStream) Write(p []byte) (int, error) { return len(p), nil }
func (b *byteStream) Read(p []byte) (int, error)  { return b.r.Read(p) }
func (b *byteStream) Abort()                      {}
func (b *byteStream) Close() (int64, error)       { return 0, nil }
func (b *byteStream) Stderr() string              { return "" }
func streamOf(b []byte) Launcher                  { return launcherOf(&byteStream{bytes.NewReader(b)}) }
func launcherOf(t Transport) Launcher {
	return func(context.Context) (Transport, error) { return t, nil }
}
func frameOf(kind byte, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{kind}, uint32(len(body))), body...)
}
func hello() []byte { return frameOf('H', []byte(`{"protocol":1,"python":"3.11"}`)) }
func recordFrame(kind byte, value []byte) []byte {
	return frameOf('R', append(append(make([]byte, 16), kind), append(make([]byte, 8), value...)...))
}
func endFrame(job, records int, status endStatus) []byte {
	b, _ := json.Marshal(jobEnd{Job: job, Status: status, Records: records})
	return frameOf('E', b)
}

func testJob(n int) *job {
	limits := make([]float64, n)
	for i := range limits {
		limits[i] = 1
	}
	return &job{ID: 7, EntryPoint: "f", Program: []byte("x"), Inputs: []byte("[]"), Limits: limits,
		FirstExtra: 1, PhaseLimit: 10, WallFactor: 3, RecordCap: 1 << 20, ByteCap: 1 << 22, Memory: 1 << 28, FSize: 1}
}

func TestWorkerReadsAJob(t *testing.T) {
	stream := append(hello(), recordFrame('V', intv(1))...)
	stream = append(stream, frameOf('P', nil)...)
	stream = append(stream, recordFrame('V', intv(2))...)
	stream = append(stream, endFrame(7, 2, "done")...)
	w := &worker{launch: streamOf(stream)}
	var got []int64
	end, err := w.run(context.Background(), testJob(2), func(k int, r record) bool {
		n, _ := numberAt(r.Data, 0)
		got = append(got, n.small)
		return true
	})
	if err != nil || end.Status != "done" || len(got) != 2 || got[1] != 2 {
		t.Fatalf("end %+v, err %v, records %v", end, err, got)
	}
}

func TestWorkerLosesABrokenSupervisor(t *testing.T) {
	for name, tail := range map[string][]byte{
		"truncated record":     recordFrame('V', intv(1))[:10],
		"unknown frame":        frameOf('Q', nil),
		"oversized frame":      {'R', 0xff, 0xff, 0xff, 0xff},
		"end for another job":  endFrame(8, 0, "done"),
		"end with wrong count": endFrame(7, 5, "done"),
		"too many records":     append(recordFrame('V', intv(1)), recordFrame('V', intv(1))...),
		"fatal":                frameOf('F', []byte("boom")),
		"record of bad kind":   recordFrame('Z', intv(1)),
	} {
		w := &worker{launch: streamOf(append(hello(), tail...))}
		end, err := w.run(context.Background(), testJob(1), func(int, record) bool { return true })
		if err != nil || end.Status != "lost" {
			t.Errorf("%s: end %+v, err %v; want the supervisor lost", name, end, err)
		}
		if w.t != nil {
			t.Errorf("%s: the lost supervisor was kept", name)
		}
	}
}

func FuzzSupervisorStream(f *testing.F) {
	f.Add(append(append(hello(), recordFrame('V', floatv(math.Pi))...), endFrame(7, 1, "done")...))
	f.Add(append(append(hello(), recordFrame('X', []byte("ValueError: x"))...), endFrame(7, 1, "stopped")...))
	f.Add(append(hello(), frameOf('M', []byte("SyntaxError"))...))
	f.Add(hello())
	f.Add([]byte{})
	exp := mustParse(f, floatv(math.Pi))
	f.Fuzz(func(t *testing.T, stream []byte) {
		w := &worker{launch: streamOf(stream)}
		o := testOracle(HumanEvalPlus, 0, "f")
		w.run(context.Background(), testJob(3), func(k int, r record) bool {
			if r.Kind != 'V' {
				return false
			}
			v, err := ParseValue(r.Data, DefaultBounds)
			if err != nil {
				return false
			}
			ok, _ := o.check([]byte("[1]"), v, exp)
			return ok
		})
	})
}
