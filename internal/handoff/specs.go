package handoff

// The manifest's volumes, image and entry point, filled in from the
// configuration before any check runs.

// Container mount points of the data classes.
var mounts = map[string]string{
	ClassDataset:     "/data",
	ClassCheckpoint:  "/checkpoint",
	ClassSource:      "/source",
	ClassOutput:      "/results",
	ClassCredentials: "/credentials",
}

func fillSpecs(m *Manifest, w *Workload, c *Config) {
	m.GPUs = c.GPUs
	m.ImageCUDA = c.ImageCUDA
	if c.Runtime != nil {
		rt := *c.Runtime
		m.Runtime = &rt
	}
	if c.Node != nil {
		m.Node = NodeSpec{MinDiskGiB: c.Node.MinDiskGiB, MinMemoryGiB: c.Node.MinMemoryGiB, WorkDir: c.Node.WorkDir}
	}
	if m.Node.WorkDir == "" {
		m.Node.WorkDir = "/tmp"
	}
	m.Command = c.Command
	m.LogFile = c.LogFile
	if len(m.Command) == 0 {
		m.Command = w.DefaultCommand
		if m.LogFile == "" {
			m.LogFile = w.DefaultLogFile
		}
	}
	if s := c.Slurm; s != nil {
		m.Slurm = SlurmSpec{Partition: s.Partition, Account: s.Account, Time: s.Time}
	}
	k := KubernetesSpec{Namespace: "default", WorkGiB: m.Node.MinDiskGiB, ShmGiB: 1, RunAsUser: 1000}
	if kc := c.Kubernetes; kc != nil {
		if kc.Namespace != "" {
			k.Namespace = kc.Namespace
		}
		k.CPUs = kc.CPUs
		if kc.WorkGiB > 0 {
			k.WorkGiB = kc.WorkGiB
		}
		if kc.ShmGiB > 0 {
			k.ShmGiB = kc.ShmGiB
		}
		if kc.RunAsUser > 0 {
			k.RunAsUser = kc.RunAsUser
		}
	}
	if k.WorkGiB == 0 {
		k.WorkGiB = 1
	}
	m.Kubernetes = k

	add := func(class string, v *Volume, ro bool) {
		vs := VolumeSpec{Class: class, Mount: mounts[class], ReadOnly: ro, Claim: "repro-" + w.Name + "-" + class}
		if v != nil {
			vs.NodePath = v.NodePath
			if vs.NodePath == "" {
				vs.NodePath = v.Path
			}
			if v.Claim != "" {
				vs.Claim = v.Claim
			}
		}
		m.Volumes = append(m.Volumes, vs)
	}
	if w.NeedsDataset || (c.ProGames != nil && c.ProGames.Decision == "include") {
		add(ClassDataset, c.Volumes.Dataset, true)
	}
	add(ClassCheckpoint, c.Volumes.Checkpoint, true)
	add(ClassSource, c.Volumes.Source, true)
	add(ClassOutput, c.Volumes.Output, false)
	if c.Volumes.Credentials != nil {
		add(ClassCredentials, c.Volumes.Credentials, true)
	}
}

// Volume returns the manifest's volume of a class.
func (m *Manifest) Volume(class string) (VolumeSpec, bool) {
	for _, v := range m.Volumes {
		if v.Class == class {
			return v, true
		}
	}
	return VolumeSpec{}, false
}
