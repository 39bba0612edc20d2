package handoff

import "github.com/reprolab/repro/internal/exitcode"

// ConfigFromFlags reads the configuration file path (when given) and
// applies the --container choice to it. It returns nil and no digest when
// neither is given; a container that contradicts the file's, or is not
// one of ContainerPyxis, ContainerApptainer and ContainerPodman, is a usage
// error.
func ConfigFromFlags(path, container string) (*Config, string, error) {
	var cfg *Config
	var digest string
	if path != "" {
		var err error
		if cfg, digest, err = LoadConfig(path); err != nil {
			return nil, "", err
		}
	}
	if container == "" {
		return cfg, digest, nil
	}
	if cfg == nil {
		cfg = &Config{}
	}
	if cfg.Container != "" && cfg.Container != container {
		return nil, "", exitcode.Errorf(exitcode.Usage, "--container %s contradicts the configuration's container %s", container, cfg.Container)
	}
	if container != ContainerPyxis && container != ContainerApptainer && container != ContainerPodman {
		return nil, "", exitcode.Errorf(exitcode.Usage, "--container %q: want pyxis, apptainer or podman", container)
	}
	cfg.Container = container
	return cfg, digest, nil
}
