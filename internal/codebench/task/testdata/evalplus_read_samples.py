# Reads samples files with EvalPlus's own reader, for the differential test
# of repro's reader (samples_python_test.go).
#
# argv: the EvalPlus tree, and a JSON file {task_id: prompt} (the dataset).
# stdin: one line per samples file, its bytes in base64.
# stdout: one JSON line per file: {"ok": true, "samples": [[task_id,
# program as UTF-8 in base64], ...], "skipped": n} with the samples in file
# order, or {"ok": false, "error": "..."} when EvalPlus would stop.
#
# Run it with -X utf8: EvalPlus opens the file in text mode with the
# locale's encoding, UTF-8 in its image.
import base64
import importlib.util
import json
import os
import sys
import tempfile
import types

tree, prompts_path = sys.argv[1], sys.argv[2]

# evalplus/data/utils.py imports these for its downloads, which the
# samples reader does not use; evalplus/data/__init__.py needs the
# datasets package, so the file is loaded on its own.
for name in ("tempdir", "wget"):
    sys.modules[name] = types.ModuleType(name)
appdirs = types.ModuleType("appdirs")
appdirs.user_cache_dir = lambda name: tempfile.gettempdir()
sys.modules["appdirs"] = appdirs
spec = importlib.util.spec_from_file_location(
    "evalplus_data_utils", os.path.join(tree, "evalplus", "data", "utils.py")
)
utils = importlib.util.module_from_spec(spec)
spec.loader.exec_module(utils)

with open(prompts_path, encoding="utf-8") as f:
    problems = {k: {"prompt": v} for k, v in json.load(f).items()}

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "samples.jsonl")
    for line in sys.stdin:
        with open(path, "wb") as f:
            f.write(base64.b64decode(line))
        try:
            out, skipped = [], 0
            # What evalplus/evaluate.py does with each sample it loads.
            for sample in utils.load_solutions(path):
                task_id = sample["task_id"]
                if task_id not in problems:
                    skipped += 1
                    continue
                solution = (
                    sample["solution"]
                    if "solution" in sample
                    else problems[task_id]["prompt"] + sample["completion"]
                )
                prog = solution.encode("utf-8", "surrogatepass")
                out.append([task_id, base64.b64encode(prog).decode("ascii")])
            res = {"ok": True, "samples": out, "skipped": skipped}
        except Exception as e:
            res = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
        print(json.dumps(res), flush=True)
