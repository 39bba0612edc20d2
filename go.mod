module github.com/reprolab/repro

go 1.26.8

require (
	github.com/secure-systems-lab/go-securesystemslib v0.9.0
	github.com/spf13/cobra v1.8.1
	golang.org/x/sys v0.38.0
	golang.org/x/term v0.37.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	golang.org/x/crypto v0.31.0 // indirect
)
