package judge

// EvalPlus's task rules (evalplus@26d6d00): evalplus/data/mbpp.py
// rebuilds the inputs of some MBPP+ tasks after loading them from JSON
// (which holds no tuples, sets or complex numbers), and
// evalplus/eval/__init__.py judges some tasks by special oracles keyed by
// entry point. docs/evalplus.md lists every rule with the task it concerns.

// TaskRules are EvalPlus's task-specific rules of one task.
type TaskRules struct {
	// Inputs names the harness's rebuild of the task's JSON inputs
	// (supervisor.py, REBUILD); "" runs them as loaded.
	Inputs string
	// Oracle is how an output is judged beyond Python equality.
	Oracle OracleKind
	// NotNone: the ground truth is `output is not None` (a bool), not the
	// output, as EvalPlus's get_groundtruth records it.
	NotNone bool
}

// OracleKind is a special oracle of EvalPlus.
type OracleKind string

// The oracles EvalPlus applies, by entry point.
const (
	OracleEqual         OracleKind = ""                    // out == exp
	OracleFindZero      OracleKind = "find_zero"           // HumanEval/32: |poly(xs, out)| <= atol
	OracleSetEqual      OracleKind = "set_equal"           // set(out) == set(exp)
	OracleNotNone       OracleKind = "not_none"            // a bool out == exp, else exp == (out is not None)
	OracleAlwaysPass    OracleKind = "always_pass"         // are_equivalent: exact or True
	OracleOrZero        OracleKind = "or_zero"             // sum_div: exact or out == 0
	OracleSurfaceArea   OracleKind = "surface_area"        // Mbpp/581: exact or |out - alternative| <= atol
	OracleDigitDistance OracleKind = "digit_distance_nums" // Mbpp/558: exact or out == alternative
)

// mbppInputRebuilds maps an input rebuild of the harness to the MBPP+ task
// numbers EvalPlus applies it to (mbpp_deserialize_inputs). Numbers that
// are not in the dataset are kept as EvalPlus lists them.
var mbppInputRebuilds = map[string][]int{
	// every argument becomes a tuple
	"tuple_args": {2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616, 630, 726, 740, 744, 809},
	// every argument is a list whose items become tuples
	"tuple_items_of_args": {63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780},
	// the items of the first argument become tuples; the second is kept; others are dropped
	"tuple_items_of_first": {75, 413, 444, 753},
	// the second argument becomes a tuple; the first is kept; others are dropped
	"tuple_second": {106, 750},
	// the items of the first argument become sets (an empty or non-list item becomes {}, a dict); others are dropped
	"sets_of_first": {115},
	// (float(first), complex(second)), both given as strings
	"float_complex": {124},
	// the first argument becomes a tuple; the second is kept; others are dropped
	"tuple_first": {250, 405, 446, 617, 720, 763, 808},
	// every argument is a list whose items become tuples, then becomes a tuple itself
	"tuple_items_then_tuple_args": {259, 401, 445},
	// the list items of the first argument become tuples, then the first argument a tuple; others are dropped
	"tuple_first_with_tuple_items": {278},
	// the first argument becomes a tuple; the second and third are kept; others are dropped
	"tuple_first_of_three": {307},
	// the values of the first argument (a dict) become tuples
	"dict_values_tuples": {722},
	// complex(first), given as a string; others are dropped
	"complex_first": {252},
	// the argument list and every list in it, at any depth, become tuples
	"deep_tuples": {580, 615, 791},
}

// mbppOracles maps entry points to EvalPlus's special MBPP oracles
// (evalplus/eval/__init__.py, evalplus/eval/_special_oracle.py).
var mbppOracles = map[string]OracleKind{
	"are_equivalent":      OracleAlwaysPass,
	"sum_div":             OracleOrZero,
	"surface_Area":        OracleSurfaceArea,
	"digit_distance_nums": OracleDigitDistance,
	// MBPP_OUTPUT_SET_EQ_TASKS
	"similar_elements":       OracleSetEqual,
	"find_char_long":         OracleSetEqual,
	"common_in_nested_lists": OracleSetEqual,
	"extract_singly":         OracleSetEqual,
	"larg_nnum":              OracleSetEqual,
	"intersection_array":     OracleSetEqual,
	"find_dissimilar":        OracleSetEqual,
	"Diff":                   OracleSetEqual,
	// MBPP_OUTPUT_NOT_NONE_TASKS
	"check_str":        OracleNotNone,
	"text_match_three": OracleNotNone,
	"text_starta_endb": OracleNotNone,
}

var mbppRebuildOf = func() map[int]string {
	m := map[int]string{}
	for name, ns := range mbppInputRebuilds {
		for _, n := range ns {
			m[n] = name
		}
	}
	return m
}()

// MBPPRules returns EvalPlus's rules of the MBPP+ task numbered index
// with the given entry point.
func MBPPRules(index int, entryPoint string) TaskRules {
	r := TaskRules{Inputs: mbppRebuildOf[index], Oracle: mbppOracles[entryPoint]}
	r.NotNone = r.Oracle == OracleNotNone
	return r
}

// HumanEvalRules returns EvalPlus's rules of a HumanEval(+) task with the
// given entry point.
func HumanEvalRules(entryPoint string) TaskRules {
	if entryPoint == "find_zero" {
		return TaskRules{Oracle: OracleFindZero}
	}
	return TaskRules{}
}
