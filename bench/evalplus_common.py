"""EvalPlus's scoring core, shared by the bench scripts that run EvalPlus's
side (humaneval_evalplus.py, mbpp_evalplus.py, passk_evalplus.py).

Each function does a part of what evalplus.evaluate.evaluate does
(evalplus@26d6d00) with EvalPlus's own functions. evalplus is imported
inside them, so the caller must first put an EvalPlus tree on sys.path.
"""


def check(dataset, problem, solution, expected):
    """EvalPlus's verdict on one sample: untrusted_check of solution for
    dataset ("humaneval" or "mbpp") on problem's base inputs, then on its
    plus inputs, against expected (ground truth: outputs and times per
    phase), with fast_check as evaluate's default and EvalPlus's default
    time limits. Returns [base_status, plus_status]."""
    from evalplus.eval import untrusted_check

    out = []
    for phase in ("base", "plus"):
        stat, _ = untrusted_check(
            dataset,
            solution,
            problem[phase + "_input"],
            problem["entry_point"],
            expected=expected[phase],
            atol=problem["atol"],
            ref_time=expected[phase + "_time"],
            fast_check=True,
        )
        out.append(stat)
    return out
