// Package edm reproduces the FID figures of EDM (Karras et al., "Elucidating
// the Design Space of Diffusion-Based Generative Models", 2022) under the
// controls of repro's security review.
//
// The package owns four things:
//
//   - the model table ([Models], [LookupModel]): per EDM model id the
//     catalog entries of its checkpoint, FID reference statistics and
//     feature detector, the paper's FID and the sampler settings of the
//     EDM release (NVlabs/edm@008a4e5, README.md and example.py);
//   - conversion ([Convert]): a pinned checkpoint, read as sealed verified
//     bytes, becomes safetensors plus a JSON config in the store without
//     executing any pickle code;
//   - the trusted runtime ([RunFID]): preflight (pins, store verification,
//     the EDM source tree digest, the runtime's own digest, a GPU check),
//     then a Python process (PyTorch + CUDA) that receives the checkpoint and
//     detector as sealed memory files, re-hashes each descriptor immediately
//     before deserializing it, generates images with EDM's own sampler and
//     writes Inception features;
//   - the statistics ([ReadFeatures], [FrechetDistance]): mean and
//     covariance with EDM's conventions and the Fréchet distance, in Go.
//
// Every step fails closed: a missing pin, asset, source tree or GPU is an
// exitcode.Precondition error returned before anything runs, and bytes that
// differ from their pin are an exitcode.Integrity error returned before the
// Python process starts. NVIDIA publishes no digests for the EDM assets, so
// against the compiled-in catalog every entry is unpinned and every command
// stops with the reviewer's instructions (`repro catalog review`).
package edm
