package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoorsLeaveTheBody: no front door reads or replaces a request's
// body: the Server reads it once, under the shared limits and after the
// concurrency slot, and hands it to Open. A door package is one under
// proxy/ with a method Open taking an *http.Request; in its code (tests
// aside) no *http.Request's Body or GetBody is used, nor
// http.MaxBytesReader called.
func TestDoorsLeaveTheBody(t *testing.T) {
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	doors := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || dir == "internal" || dir == "testdata" {
			continue
		}
		fset := token.NewFileSet()
		var files []*ast.File
		matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range matches {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		if !opensRequests(files) {
			continue
		}
		doors++
		for _, f := range files {
			for _, use := range bodyUses(f) {
				t.Errorf("%s: the door touches %s; the Server reads the request body and hands it to Open", fset.Position(use.pos), use.what)
			}
		}
	}
	if doors < 6 {
		t.Errorf("found %d door packages under proxy/, want at least platform, agentcore, foundry, a2a, mcp and openai", doors)
	}
}

// isRequest reports whether e is the type *http.Request.
func isRequest(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "http" && sel.Sel.Name == "Request"
}

// opensRequests reports whether files declare a method Open taking an
// *http.Request: a Door.
func opensRequests(files []*ast.File) bool {
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Open" {
				continue
			}
			for _, p := range fn.Type.Params.List {
				if isRequest(p.Type) {
					return true
				}
			}
		}
	}
	return false
}

type bodyUse struct {
	pos  token.Pos
	what string
}

// bodyUses finds in f every use of a request's Body or GetBody (a
// variable or field of type *http.Request, or any r.Body where r is a
// function's *http.Request parameter) and every http.MaxBytesReader.
func bodyUses(f *ast.File) []bodyUse {
	requests := map[string]bool{} // names declared as *http.Request anywhere in f
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if isRequest(n.Type) {
				for _, name := range n.Names {
					requests[name.Name] = true
				}
			}
		case *ast.ValueSpec:
			if n.Type != nil && isRequest(n.Type) {
				for _, name := range n.Names {
					requests[name.Name] = true
				}
			}
		}
		return true
	})
	var uses []bodyUse
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		switch name := sel.Sel.Name; {
		case name == "MaxBytesReader":
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "http" {
				uses = append(uses, bodyUse{sel.Pos(), "http.MaxBytesReader"})
			}
		case name == "Body" || name == "GetBody":
			var base string
			switch x := sel.X.(type) {
			case *ast.Ident:
				base = x.Name
			case *ast.SelectorExpr:
				base = x.Sel.Name
			}
			if requests[base] {
				uses = append(uses, bodyUse{sel.Pos(), base + "." + name})
			}
		}
		return true
	})
	return uses
}
