package snowdrift

import "context"

// IDs is a handle on one name for one goroutine: it holds its own block of up to
// handleBlock IDs of the name's current run, taken with one atomic add, so goroutines that
// each use their own handle do not write a shared word per ID and scale across cores,
// while each handle's IDs still increase within a run. Get one per goroutine with
// [Client.IDs]; a handle is not safe for concurrent use. IDs a dropped handle still holds
// (fewer than 1,024) are skipped, never handed out again.
//
// Snowflake runs (whose IDs must not be handed out past MaxAge), text and tso names are
// served through [Client.Next] as they are: only their warm path differs.
type IDs struct {
	c    *Client
	name string
	nc   *nameCache
	bl   block
}

// handleBlock is how many IDs a handle takes from the shared run at once: at hundreds of
// millions of IDs a second per goroutine, blocks of 64 (PerProcessor's) still made the
// run's counter a contended line (1.44x at two goroutines, against 1.96x for a loop
// sharing nothing); 1,024 makes it one add per microsecond or so.
const handleBlock = 1024

// IDs gives a handle on name for the calling goroutine (see [IDs]).
func (c *Client) IDs(name string) *IDs {
	return &IDs{c: c, name: name}
}

// Next gives the next ID of the handle's name, as [Client.Next] does.
func (h *IDs) Next(ctx context.Context) (uint64, error) {
	if h.bl.left > 0 && !h.c.closed.Load() {
		id := h.bl.next
		h.bl.left--
		h.bl.next += h.bl.stride
		return id, nil
	}
	if h.nc != nil && h.nc.kind.Load() == kindNumbers && !h.c.closed.Load() && h.refill() {
		id := h.bl.next
		h.bl.left--
		h.bl.next += h.bl.stride
		return id, nil
	}
	id, err := h.c.Next(ctx, h.name)
	if err == nil && h.nc == nil {
		h.nc = (*h.c.caches.Load())[h.name]
	}
	return id, err
}

// refill takes the handle's next block from the name's current run: false when the cache
// has none to give here (a fetch, an expiring run or the end of what is cached), and the
// caller goes through Client.Next.
func (h *IDs) refill() bool {
	nc, c := h.nc, h.c
	for {
		r := nc.cur.Load()
		if r == nil || r.expires {
			return false
		}
		start := r.next.Add(handleBlock) - handleBlock
		if start >= r.count {
			if !nc.advance(c, r) {
				return false
			}
			continue
		}
		end := start + handleBlock
		if end > r.count {
			end = r.count
		}
		h.bl = block{next: r.first + start*r.stride, left: end - start, stride: r.stride}
		if r.trigger >= start && r.trigger < end {
			c.prefetch(nc)
		}
		return true
	}
}
