// Package imagetest builds a Dockerfile on a machine without a Docker
// engine, as far as the machine allows, and runs the image's ENTRYPOINT
// and CMD as a process: each stage is a folder standing for its root,
// COPY copies into it (from the build context, less what its .dockerignore
// leaves out, from an earlier stage, or from an image the caller stands
// in for), RUN runs with sh -c, and the final stage's command runs on this
// machine's programs. Only tests import it.
package imagetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Dockerfile is a Dockerfile read into stages: instructions with their
// continuation lines joined and comments dropped.
type Dockerfile struct {
	Name   string            // the file's name, for messages
	Args   map[string]string // the ARGs before the first FROM, with their defaults
	Stages []*Stage
}

// Stage is what one FROM begins.
type Stage struct {
	Base     string            // FROM's image, the ARGs before the first FROM expanded
	Name     string            // FROM's AS name, or ""
	Platform string            // FROM's --platform, as written
	Args     map[string]string // the stage's ARGs, with their defaults
	Line     int
	Instrs   []Instr
}

// Instr is one instruction: its name upper case, the rest of its line.
type Instr struct {
	Cmd  string // RUN, COPY, …
	Args string
	Line int // where it begins
}

// Read is Parse of the file at path, named path.
func Read(path string) (*Dockerfile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(b))
}

// Parse reads the Dockerfile text, called name in its errors.
func Parse(name, text string) (*Dockerfile, error) {
	d := &Dockerfile{Name: name, Args: map[string]string{}}
	var cur strings.Builder
	start, n := 0, 0
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		op, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		cur.Reset()
		in := Instr{Cmd: strings.ToUpper(op), Args: strings.TrimSpace(args), Line: start}
		switch {
		case in.Cmd == "FROM":
			s := &Stage{Line: in.Line, Args: map[string]string{}}
			fields := strings.Fields(in.Args)
			for i := 0; i < len(fields); i++ {
				switch f := fields[i]; {
				case strings.HasPrefix(f, "--platform="):
					s.Platform = strings.TrimPrefix(f, "--platform=")
				case strings.HasPrefix(f, "--"):
				case strings.EqualFold(f, "AS") && i+1 < len(fields):
					s.Name = fields[i+1]
					i++
				default:
					s.Base = expand(f, d.Args)
				}
			}
			d.Stages = append(d.Stages, s)
		case in.Cmd == "ARG" && len(d.Stages) == 0:
			k, v, _ := strings.Cut(in.Args, "=")
			d.Args[k] = v
		case len(d.Stages) == 0:
			return nil, fmt.Errorf("%s:%d: %s before the first FROM", name, in.Line, in.Cmd)
		default:
			s := d.Stages[len(d.Stages)-1]
			if in.Cmd == "ARG" {
				for _, a := range strings.Fields(in.Args) {
					k, v, _ := strings.Cut(a, "=")
					s.Args[k] = v
				}
			}
			s.Instrs = append(s.Instrs, in)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("%s:%d: the file ends in a continuation line", name, start)
	}
	if len(d.Stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	return d, nil
}

// Stage is the stage named name, or nil.
func (d *Dockerfile) Stage(name string) *Stage {
	for _, s := range d.Stages {
		if s.Name == name && name != "" {
			return s
		}
	}
	return nil
}

// All is the stage's cmd instructions, in order.
func (s *Stage) All(cmd string) []Instr {
	var out []Instr
	for _, in := range s.Instrs {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expand replaces $NAME and ${NAME} of vars in s; other names stay.
func expand(s string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[strings.Trim(m, "${}")]; ok {
			return v
		}
		return m
	})
}

// execForm is ENTRYPOINT's or CMD's words, which must be the exec (JSON)
// form: the shell form would need the image's /bin/sh.
func execForm(name string, in Instr) ([]string, error) {
	var words []string
	if err := json.Unmarshal([]byte(in.Args), &words); err != nil {
		return nil, fmt.Errorf("%s:%d: %s %s: want the exec (JSON) form: %v", name, in.Line, in.Cmd, in.Args, err)
	}
	return words, nil
}
