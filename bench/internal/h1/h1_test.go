package h1

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestWriteRequest(t *testing.T) {
	var b bytes.Buffer
	if err := WriteRequest(&b, "POST", "/query", "127.0.0.1:8000", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	want := "POST /query HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	if b.String() != want {
		t.Errorf("WriteRequest = %q, want %q", b.String(), want)
	}
}

func TestReadHead(t *testing.T) {
	tests := []struct {
		reply string
		want  Head
		body  string
		rest  string // what is left on the connection after the body (and trailer)
	}{
		{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}next",
			Head{Status: 200, Length: 2, ContentType: "application/json"}, "{}", "next"},
		{"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{}\n\r\n0\r\n\r\nnext",
			Head{Status: 200, Length: -1, Chunked: true, ContentType: "application/x-ndjson"}, "{}\n", "next"},
		{"HTTP/1.0 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\nno colon\r\n\r\n",
			Head{Status: 503, Length: 0, Close: true}, "", ""},
	}
	for _, tt := range tests {
		br := bufio.NewReader(strings.NewReader(tt.reply))
		h, err := ReadHead(br)
		if err != nil || h != tt.want {
			t.Errorf("ReadHead(%q) = %+v, %v, want %+v", tt.reply, h, err, tt.want)
			continue
		}
		body, err := io.ReadAll(h.Body(br))
		if err != nil || string(body) != tt.body {
			t.Errorf("body of %q = %q, %v, want %q", tt.reply, body, err, tt.body)
		}
		if h.Chunked {
			if err := ReadTrailer(br); err != nil {
				t.Errorf("ReadTrailer after %q: %v", tt.reply, err)
			}
		}
		if rest, _ := io.ReadAll(br); string(rest) != tt.rest {
			t.Errorf("after %q left %q, want %q", tt.reply, rest, tt.rest)
		}
	}
}

func TestReadHeadErrors(t *testing.T) {
	for _, reply := range []string{"", "SSH-2.0-OpenSSH\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"} {
		if h, err := ReadHead(bufio.NewReader(strings.NewReader(reply))); err == nil {
			t.Errorf("ReadHead(%q) = %+v, want an error", reply, h)
		}
	}
}

func TestBodyWithoutLength(t *testing.T) {
	if b := (Head{Status: 200, Length: -1}).Body(bufio.NewReader(strings.NewReader("x"))); b != nil {
		t.Errorf("Body of a head without a length = %v, want nil", b)
	}
}
