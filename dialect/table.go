package dialect

// table remembers a value by id for the rest of a stream (a tool's name by
// its call id, the text length seen of a message) in at most max bytes:
// past that the oldest ids are forgotten. A forgotten id costs what it
// was for: a tool result without its name, say. A table of max 0 holds
// 8 MiB.
type table[V any] struct {
	m     map[string]entry[V]
	order []string // ids in the order first put, the oldest first
	bytes int
	max   int
}

type entry[V any] struct {
	v    V
	cost int
}

// entryCost is what an id costs besides its bytes and its value's: its
// map entry and its place in order.
const entryCost = 64

func (t *table[V]) get(id string) (V, bool) {
	e, ok := t.m[id]
	return e.v, ok
}

// put remembers v, of size bytes, by id.
func (t *table[V]) put(id string, v V, size int) {
	if t.m == nil {
		t.m = map[string]entry[V]{}
	}
	cost := len(id) + size + entryCost
	if old, ok := t.m[id]; ok {
		t.bytes -= old.cost
	} else {
		t.order = append(t.order, id)
	}
	t.m[id] = entry[V]{v, cost}
	t.bytes += cost
	max := t.max
	if max <= 0 {
		max = defaultMaxRecord
	}
	for t.bytes > max && len(t.order) > 0 {
		old := t.order[0]
		t.order[0] = ""
		t.order = t.order[1:]
		t.bytes -= t.m[old].cost
		delete(t.m, old)
	}
}
