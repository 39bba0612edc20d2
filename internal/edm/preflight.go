package edm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
)

// GPU is one device as nvidia-smi reports it.
type GPU struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	Driver   string `json:"driver"`
	TotalMiB int64  `json:"total_mib"`
	FreeMiB  int64  `json:"free_mib"`
}

// nvidiaSMIQuery is the query the preflight runs.
var nvidiaSMIQuery = []string{"--query-gpu=index,name,driver_version,memory.total,memory.free", "--format=csv,noheader,nounits"}

// QueryGPUs runs nvidia-smi and returns the devices it lists. No nvidia-smi,
// a failing one or no device is an exitcode.Precondition error.
func QueryGPUs(ctx context.Context) ([]GPU, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "GPU preflight: nvidia-smi not found: the EDM runtime needs an NVIDIA GPU with its driver installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stdout limitedBuffer
	stdout.max = 64 << 10
	var stderr tailBuffer
	stderr.max = 1 << 10
	cmd := exec.CommandContext(ctx, path, nvidiaSMIQuery...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "GPU preflight: nvidia-smi failed (%v): %s", err, strings.TrimSpace(stderr.String()))
	}
	gpus, err := parseNvidiaSMI(stdout.Bytes())
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "GPU preflight: %v", err)
	}
	return gpus, nil
}

// parseNvidiaSMI reads the CSV lines of nvidiaSMIQuery.
func parseNvidiaSMI(out []byte) ([]GPU, error) {
	var gpus []GPU
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		f := strings.Split(string(line), ",")
		if len(f) != 5 {
			return nil, fmt.Errorf("unexpected nvidia-smi line %q", clipString(string(line)))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		idx, err1 := strconv.Atoi(f[0])
		total, err2 := strconv.ParseInt(f[3], 10, 64)
		free, err3 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || idx < 0 || total < 0 || free < 0 || f[2] == "" {
			return nil, fmt.Errorf("unexpected nvidia-smi line %q", clipString(string(line)))
		}
		gpus = append(gpus, GPU{Index: idx, Name: f[1], Driver: f[2], TotalMiB: total, FreeMiB: free})
		if len(gpus) > 64 {
			return nil, errors.New("nvidia-smi lists more than 64 devices")
		}
	}
	if len(gpus) == 0 {
		return nil, errors.New("nvidia-smi lists no GPU")
	}
	return gpus, nil
}

// TorchInfo is what the runtime's PyTorch reports.
type TorchInfo struct {
	Python        string `json:"python"`
	Torch         string `json:"torch"`
	CUDA          string `json:"cuda"`
	CUDAAvailable bool   `json:"cuda_available"`
	Devices       []struct {
		Index      int    `json:"index"`
		Name       string `json:"name"`
		FreeBytes  int64  `json:"free_bytes"`
		TotalBytes int64  `json:"total_bytes"`
	} `json:"devices"`
}

// torchPreflight asks the runtime's PyTorch for CUDA and the free memory of
// the device it will use (the first visible one); too little is an
// exitcode.Precondition error.
func (r *runtimeEnv) torchPreflight(ctx context.Context, minFree int64) (TorchInfo, error) {
	raw, err := r.run(ctx, "preflight", nil, nil)
	if err != nil {
		return TorchInfo{}, err
	}
	var ti TorchInfo
	if err := strictjson.DecodeOpen(raw, &ti); err != nil {
		return ti, fmt.Errorf("EDM runtime preflight: bad result: %v", err)
	}
	if !ti.CUDAAvailable || len(ti.Devices) == 0 {
		return ti, exitcode.Errorf(exitcode.Precondition, "GPU preflight: PyTorch %s (%s) reports torch.cuda.is_available() false: install a CUDA build of PyTorch for this driver", ti.Torch, r.python)
	}
	if d := ti.Devices[0]; d.FreeBytes < minFree {
		return ti, exitcode.Errorf(exitcode.Precondition, "GPU preflight: %s has %.1f GiB free, the model needs %.1f GiB: free the GPU or pick another with CUDA_VISIBLE_DEVICES",
			d.Name, float64(d.FreeBytes)/float64(gib), float64(minFree)/float64(gib))
	}
	return ti, nil
}
