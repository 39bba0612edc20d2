module github.com/reprolab/repro

go 1.26.8

require (
	github.com/spf13/cobra v1.8.1
	golang.org/x/sys v0.38.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
)
