// Package pickle decodes Python pickles and torch.save files statically:
// nothing in the input is ever executed, imported or compiled, however the
// file is built. It is the only code in repro that reads upstream model
// pickles, and it replaces pickle.load for them.
//
// # Decoding
//
// The decoder understands every opcode of pickle protocols 0 to 5. It
// resolves the memo (PUT, BINPUT, LONG_BINPUT and MEMOIZE, with CPython's
// numbering), MARKs and STACK_GLOBAL operands as a real unpickler would and
// builds an inert object graph (see [Value]): globals are names, calls of
// globals without an inert implementation become [Object] records. It
// rejects unknown opcodes, opcodes newer than the declared protocol, PROTO
// anywhere but first, lengths beyond the remaining bytes (checked before
// anything is allocated), opcodes or arguments that cross a FRAME boundary,
// STOP that leaves values or frame bytes behind, and trailing data. The
// work a file can cause is bounded: stack, MARK nesting, text lines,
// integer sizes, a memory budget of the input size plus 64 MiB, walks of
// the object graph, and exported tensor bytes (twice the input plus 1 MiB).
// A decoder bug is caught by recover and reported as an [InternalError],
// never as an acceptance.
//
// Containers: a plain pickle (what EDM's training loop writes), the legacy
// torch.save format (magic, protocol and sys_info pickles, the object, the
// storage keys, then raw storages) and the zip format in exactly the
// layout torch.save writes (records stored uncompressed under one folder,
// back to back, then one central directory and end records that agree,
// CRC-checked after the layout). A file that Python's tarfile would take
// for a tar archive, which torch.load tries first, is refused, so that
// PyTorch and this package read the same bytes. torch.storage._load_from_bytes blobs nested in a pickle are
// decoded as torch files that may hold exactly one storage and no call.
//
// # Profiles
//
// A [Profile] is an allowlist kept as data (profiles.json, compiled in):
// the containers, opcodes, callable globals, torch.nn module classes,
// storage types and persistent-class names a file may use, and the shape
// of its top-level value. The compiled-in profiles are
//
//   - edm-checkpoint: pickle.dump of a dict whose "ema" entry is a
//     torch_utils.persistence record of EDMPrecond, VPPrecond, VEPrecond
//     or iDDPMPrecond; exports the ema network's state_dict.
//   - inception-detector: a persistent module at the top level (class names
//     not pinned until the released file's listing is recorded).
//   - torch-state-dict: a mapping of names to tensors saved with torch.save
//     (zip or legacy) or pickle.dump.
//
// Every global has an inert implementation: OrderedDict builds a dict,
// _rebuild_tensor_v2 a [Tensor] view checked against its storage,
// _rebuild_parameter a [Parameter], _load_from_bytes a [Storage] whose
// bytes alias the input, numpy scalar and dtype plain numbers, and
// torch_utils.persistence._reconstruct_persistent_obj a [Persistent]
// record holding the class name, persistence version, state and the
// embedded module source with its SHA-256, which Python would execute and
// this package only hashes.
//
// # API
//
// Callers read the input once, into memory, and decode those same bytes:
//
//	p, err := pickle.LookupProfile(pickle.ProfileEDMCheckpoint)
//	rep, err := pickle.Scan(f, size, p)     // or ScanBytes(data, p)
//	if rep.Verdict != pickle.Clean { return rep.Err() }
//
//	m, err := pickle.ConvertBytes(data, p)  // or Convert(f, size, p)
//	// err is a *PolicyError (exit 1), *MalformedError or *InternalError (exit 4)
//	w, err := m.WriteFiles(dir, 0o644)      // model.safetensors + config.json, atomically
//
// [Scan] reports (opcodes, globals, nested blobs, embedded sources,
// persistent classes, tensors, violations) and continues past violations
// so that the report lists them; [Convert] stops at the first problem.
// Both give the same verdict for the same bytes. [Model.Tensors] are in
// state_dict order and named as state_dict() names them (for an EDM
// snapshot: the ema network's parameters and persistent buffers);
// [Model.Config] records the network class, its recorded constructor
// arguments as inert JSON ([InertJSON]), the embedded-source digests and
// the input's SHA-256 and size. The safetensors writer ([EncodeSafetensors],
// [WriteSafetensorsFile]) writes each view's contiguous (C-order) bytes, so
// they equal PyTorch's state_dict() tensors made contiguous.
package pickle
