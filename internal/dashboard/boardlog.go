package dashboard

import (
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"github.com/reprolab/repro/internal/boardlog"
)

// boardLog serves /board/log/DATASET/FILE: the checkpoint and tiles of
// the log of DATASET's board (see internal/boardlog), as the store holds
// them, for `repro log verify`. Only a log file's path is served; any
// other path, or a file not there, is 404.
func (s *Server) boardLog(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	l, err := boardlog.Open(s.Home, r.PathValue("dataset"))
	var b []byte
	if err == nil {
		b, err = l.ReadFile(file)
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && s.Log != nil {
			s.Log.Printf("%s %q: %v", r.Method, r.URL.Path, err)
		}
		http.Error(w, "no such file of a board log", http.StatusNotFound)
		return
	}
	ct := "application/octet-stream"
	if file == "checkpoint" || strings.Contains(file, "/data/") {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Write(b)
}
