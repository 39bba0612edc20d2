"""Reading a samples file for the bench scripts that run EvalPlus's side."""
import json
import sys


def load_samples(path):
    """The solution of each task in a samples file (task_id, solution): one
    sample per task, as a greedy run gives."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                s = json.loads(line)
                if s["task_id"] in out:
                    sys.exit("%s: more than one sample of %s" % (path, s["task_id"]))
                out[s["task_id"]] = s["solution"]
    return out
