package handoff

import (
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
)

// TestDefaultCatalog: the compiled-in catalog has every entry the
// workloads use, with the published figures the notes cite, and no
// invented pin where upstream publishes none.
func TestDefaultCatalog(t *testing.T) {
	cat := catalog.Default()
	get := func(id string) catalog.Entry {
		e, err := cat.Lookup(id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return e
	}
	for _, id := range []string{idMiniGoSource, idDLRMSource} {
		e := get(id)
		if e.Kind != catalog.SourceTree || !e.IsPinned() || e.TreeDigest == nil || len(e.Facts["upstream_commit"]) != 40 {
			t.Errorf("%s: %+v", id, e)
		}
	}
	mg := get(idMiniGoSource)
	flags := 0
	for k, v := range mg.Facts {
		if strings.HasPrefix(k, "sha256:ml_perf/flags/19/") && isHex(v, 64) {
			flags++
		}
	}
	if flags != 8 || !strings.HasPrefix(mg.Facts["upstream_commit"], "6d89c202") {
		t.Errorf("minigo flag pins: %d", flags)
	}
	if e := get(idDLRMSource); !strings.HasPrefix(e.Facts["upstream_commit"], "6d75c84d") {
		t.Errorf("dlrm commit %s", e.Facts["upstream_commit"])
	}
	ck := get(idDLRMCheckpoint)
	if ck.IsPinned() || ck.Facts["md5"] != "2d49a5288cddb37c3c64860a06d79bb9" || ck.Filename != "tb00_40M.pt" {
		t.Errorf("checkpoint: %+v", ck)
	}
	for i := 0; i < criteoDays; i++ {
		e := get(idCriteoDayPrefix + strconv.Itoa(i))
		if e.IsPinned() || e.Kind != catalog.External || !isHex(e.Facts["md5"], 32) || !isHex(e.Facts["gz_md5"], 32) || e.License != "CC BY-NC-SA 4.0" {
			t.Errorf("day %d: %+v", i, e)
		}
		if n, err := strconv.Atoi(e.Facts["du_kib"]); err != nil || n < 30_000_000 {
			t.Errorf("day %d du %s", i, e.Facts["du_kib"])
		}
	}
	for id, md5 := range map[string]string{"criteo-terabyte-day-0": "331703bf14b9a699324d589efd676962", "criteo-terabyte-day-23": "08e251af4f3d1e8771ea15e405f39600"} {
		if get(id).Facts["md5"] != md5 {
			t.Errorf("%s md5 %s", id, get(id).Facts["md5"])
		}
	}
	if get("criteo-terabyte-day-0").Facts["gz_md5"] != "6cef23542552c3195e9e6e2bdbc4c235" {
		t.Error("day_0.gz md5")
	}
	if e := get(idDLRMTrainBin); e.Facts["size"] != strconv.FormatInt(4195197692*160, 10) {
		t.Errorf("train size %s", e.Facts["size"])
	}
	if e := get(idDLRMTestBin); e.Facts["size"] != strconv.FormatInt(89137319*160, 10) {
		t.Errorf("test size %s", e.Facts["size"])
	}
	for _, id := range []string{idMiniGoBootstrap, idMiniGoTarget, idDLRMFeatureCount} {
		if e := get(id); e.IsPinned() || e.SHA256 != nil || len(e.Facts) != 0 {
			t.Errorf("%s carries figures upstream does not publish: %+v", id, e)
		}
	}
}
